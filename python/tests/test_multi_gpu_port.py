"""scripts/multi_gpu_check.py's rendezvous port, without PyTorch: by default each phase takes a
free port, so that two checks on one host (two test runs side by side) never join each other's
process group."""
import importlib.util
import os
import socket

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "multi_gpu_check.py")


def load():
    spec = importlib.util.spec_from_file_location("multi_gpu_check", SCRIPT)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_the_default_port_is_a_free_one_per_phase():
    m = load()
    assert m.parse_args([]).port == 0
    assert m.parse_args(["--port", "29517"]).port == 29517
    port = m.free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))  # nothing listens there: a rank can bind it
        held = s.getsockname()[1]
        s.listen()
        assert m.free_port() != held  # a port in use is never handed out
