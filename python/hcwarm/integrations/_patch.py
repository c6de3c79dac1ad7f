"""Replacing an engine's functions in place, and putting them back.

A Patcher remembers every (owner, attribute) it replaced and the original object, so that
uninstall() restores exactly those, and a second install() changes nothing already replaced.
Owners are modules, classes or any object with attributes (torch.ops namespaces).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
import types
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

log = logging.getLogger("hcwarm.integrations")


def parameters(obj: Any) -> Optional[List[str]]:
    """Parameter names of a function, or of a torch operator's schema; None when unknown
    (not inspectable, or a generic (*args, **kwargs) wrapper)."""
    schema = getattr(getattr(obj, "default", None), "_schema", None)
    if schema is not None:
        return [a.name for a in schema.arguments]
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    return [p.name for p in params]


def _current(owner: Any, attr: str) -> Any:
    # A class's own entry, not an inherited one (restoring must not shadow a base class).
    if isinstance(owner, type):
        return owner.__dict__.get(attr)
    return getattr(owner, attr, None)


class Patcher:
    def __init__(self, engine: str, package: str):
        self.engine = engine
        self.package = package
        self._replaced: Dict[str, Tuple[Any, str, Any, Any]] = {}  # key -> (owner, attr, original, replacement)
        self._by_attr: Dict[str, Tuple[Any, Any]] = {}  # module attribute -> (replacement, first original)
        self._absent_said = False

    def engine_present(self) -> bool:
        if sys.modules.get(self.package) is not None:
            return True
        try:
            return importlib.util.find_spec(self.package) is not None
        except (ImportError, ValueError):
            return False

    def say_absent(self, why: str) -> Dict[str, Any]:
        if not self._absent_said:
            self._absent_said = True
            warnings.warn(f"hcwarm.integrations: {why}; install() replaced nothing", RuntimeWarning, stacklevel=3)
        return {}

    def import_modules(self, names: Iterable[str]) -> List[Any]:
        """The named modules this version of the engine has (a missing one is skipped, not an error)."""
        found = []
        for name in names:
            try:
                found.append(importlib.import_module(name))
            except ImportError as e:
                missing = getattr(e, "name", None) or ""
                if missing and (name == missing or name.startswith(missing + ".")):
                    log.debug("%s has no %s", self.engine, name)
                else:  # the module exists but cannot be imported here: its functions stay the engine's
                    log.warning("hcwarm.integrations: cannot import %s (%s); left as it is", name, e)
        return found

    def original(self, key: str, owner: Any, attr: str) -> Any:
        """What owner.attr held before install() (its current value when not replaced)."""
        entry = self._replaced.get(key)
        return entry[2] if entry is not None else _current(owner, attr)

    def replace(self, key: str, owner: Any, attr: str, replacement: Any) -> None:
        if key in self._replaced or _current(owner, attr) is None:
            return
        theirs, ours = parameters(_current(owner, attr)), parameters(replacement)
        if theirs is not None and ours is not None and theirs != ours:
            # another version of the engine: its callers would not fit the adapter
            log.warning("hcwarm.integrations: %s takes (%s), the adapter (%s); left as it is", key,
                        ", ".join(theirs), ", ".join(ours))
            return
        self._replaced[key] = (owner, attr, _current(owner, attr), replacement)
        if self._is_engine_module(owner):
            self._by_attr.setdefault(attr, (replacement, _current(owner, attr)))
        setattr(owner, attr, replacement)

    def _is_engine_module(self, owner: Any) -> bool:
        name = getattr(owner, "__name__", "") if isinstance(owner, types.ModuleType) else ""
        return name == self.package or name.startswith(self.package + ".")

    def engine_modules(self) -> List[Tuple[str, Any]]:
        return [(name, m) for name, m in list(sys.modules.items()) if m is not None and self._is_engine_module(m)]

    def replace_bound(self, originals: Dict[str, List[Any]], replacements: Dict[str, Any]) -> None:
        """Every loaded module of the engine that bound an original under its own name
        (``from engine.mod import name`` at module level) gets the replacement too."""
        for modname, module in self.engine_modules():
            space = getattr(module, "__dict__", {})
            for attr, objs in originals.items():
                if any(space.get(attr) is o for o in objs):
                    self.replace(f"{modname}.{attr}", module, attr, replacements[attr])

    def mapping(self) -> Dict[str, Any]:
        return {key: entry[2] for key, entry in self._replaced.items()}

    def uninstall(self) -> Dict[str, Any]:
        restored = {}
        for key, (owner, attr, original, replacement) in reversed(list(self._replaced.items())):
            if _current(owner, attr) is replacement:
                setattr(owner, attr, original)
                restored[key] = original
            else:  # someone replaced hcwarm's function since: leave theirs in place
                log.warning("hcwarm.integrations: %s changed after install(); not restored", key)
        # Modules imported after install() bound the adapters themselves: they get the originals back too.
        for modname, module in self.engine_modules():
            for attr, (replacement, original) in self._by_attr.items():
                if getattr(module, "__dict__", {}).get(attr) is replacement:
                    setattr(module, attr, original)
                    restored[f"{modname}.{attr}"] = original
        self._replaced.clear()
        self._by_attr.clear()
        if restored:
            log.info("hcwarm.integrations: restored %d %s function(s)", len(restored), self.engine)
        return restored


def as_method(adapter: Callable, original: Callable) -> Optional[Callable]:
    """A method (self, ...) calling adapter with the original method's defaults and parameter
    names, mapped by position; None when the two do not have the same number of parameters."""
    names = list(inspect.signature(adapter).parameters)
    params = list(inspect.signature(original).parameters.values())[1:]  # without self
    if len(params) != len(names):
        return None
    rename = {p.name: n for p, n in zip(params, names) if p.name != n}
    fill = [(i, n, p.default) for i, (p, n) in enumerate(zip(params, names)) if p.default is not p.empty]

    def method(self, *args, **kwargs):
        if rename:
            kwargs = {rename.get(k, k): v for k, v in kwargs.items()}
        for index, name, default in fill:
            if index >= len(args) and name not in kwargs:
                kwargs[name] = default
        return adapter(*args, **kwargs)

    method.__name__ = original.__name__
    method.__qualname__ = getattr(original, "__qualname__", original.__name__)
    method.__doc__ = adapter.__doc__
    method.__signature__ = inspect.signature(original)
    return method
