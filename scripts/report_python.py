# SPDX-License-Identifier: Apache-2.0
"""The Python section of docs/performance.md (scripts/report.py calls it),
from measure_python.py's measurements, with the Python bindings' target."""


from report_serve import _met, _mm  # one formatting for every section


def python_section(m, rel_path):
    if not m:
        return ("Not measured yet: run `scripts/measure-python.sh`, which writes "
                "`docs/measurements/python-DATE.json`, then `python3 scripts/report.py`.")
    commit = f" at commit {m['git_commit']}" if m.get("git_commit") else ""
    mib = m["object_bytes"] / (1 << 20)
    rate = lambda ms: f"{mib / (ms['median'] / 1000):,.0f} MiB/s"  # noqa: E731
    whole, pieces = m["whole_vs_cpp"], m["pieces_vs_cpp"]
    return "\n".join([
        f"Measured {m['date']}{commit}, {m['rounds']} rounds, {m['nproc']} cores, a {mib:.0f} MiB object. "
        f"Source: `{rel_path}`. Method: {m['notes']}.", "",
        "| measure | target | measured | |", "|---|---|---|---|",
        f"| `Store.open(ref).readinto` of one buffer the object's size | ≥ 0.9× the C++ reader | "
        f"{_mm(whole)}× ({_mm(m['python_readinto_whole_ms'], 1)} ms, {rate(m['python_readinto_whole_ms'])}) | "
        f"{_met(whole['median'] >= 0.9)} |",
        f"| the same in 1 MiB `readinto` calls into one reused buffer | ≥ 0.9× the C++ reader | "
        f"{_mm(pieces)}× ({_mm(m['python_readinto_1mib_ms'], 1)} ms, {rate(m['python_readinto_1mib_ms'])}) | "
        f"{_met(pieces['median'] >= 0.9)} |",
        f"| C++ reader (chunkstore-bench read-verified, 1 MiB reads) | | "
        f"{_mm(m['cpp_read_verified_ms'], 1)} ms, {rate(m['cpp_read_verified_ms'])} | |",
    ])
