"""Prints the cluster tests' wall times at the end of the run (also without -s)."""


def pytest_terminal_summary(terminalreporter):
    lines = []
    for key in ("passed", "failed"):
        for report in terminalreporter.stats.get(key, []):
            if getattr(report, "when", None) != "call" or "tests/cluster/" not in report.nodeid:
                continue
            lines += [f"{value} [{key}]" for name, value in report.user_properties
                      if name == "wall time"]
    if lines:
        terminalreporter.section("cluster wall times")
        for line in lines:
            terminalreporter.line(line)
