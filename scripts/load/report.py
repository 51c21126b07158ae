#!/usr/bin/env python3
"""Writes the tables of one `make bench` run into docs/PERFORMANCE.md, between `<!-- bench:begin -->` and
`<!-- bench:end -->` (everything else in the file is left as it is).

  report.py RESULTS.jsonl DOC [PROFILE.txt]

RESULTS holds the JSON lines of the run (scripts/bench.sh writes them): a "machine" line, bench-decrypt.sh's
summary line, load-test.sh's scenario and check lines (each with its "store"), soak-test.sh's verdict line, and
"failed" lines for steps that failed. PROFILE is `perf report --no-children --sort dso,symbol --stdio` of the
server during the SQLite payments scenario, summed here by area.
"""

import json
import re
import sys

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
SCENARIOS = ["products", "checkouts", "sheetUpdates", "payments", "replays"]
TARGETS = {"products": "≥ 30,000/s", "checkouts": "≥ 8,000/s", "payments": "≥ 2,000/s, p99 ≤ 25 ms",
           "replays": "≥ 5,000/s"}


def areas(profile_path):
    """Self time by area from `perf report --sort dso,symbol`: [(area, percent)], largest first."""
    totals = {}
    line_pattern = re.compile(r"^\s+(\d+\.\d+)%\s+(\S+)\s+\[[.kK]\]\s+(.*)$")
    with open(profile_path, errors="replace") as report:
        for line in report:
            match = line_pattern.match(line)
            if not match:
                continue
            percent, dso, symbol = float(match.group(1)), match.group(2), match.group(3)
            totals[area(dso, symbol)] = totals.get(area(dso, symbol), 0.0) + percent
    return sorted(totals.items(), key=lambda item: -item[1])


def area(dso, symbol):
    if dso.startswith("[kernel") or dso == "[unknown]" and symbol.startswith("0xffff"):
        return "kernel (system calls, network, scheduling, page faults)"
    if "libcrypto" in dso or "libssl" in dso:
        return "OpenSSL libcrypto (ECDH, ECDSA, RSA, AES, digests)"
    if "libsqlite3" in dso:
        return "SQLite"
    if "libpq" in dso:
        return "libpq"
    if "libmicrohttpd" in dso:
        return "libmicrohttpd (HTTP)"
    if "Foundation" in dso or "JSON" in symbol or "Coding" in symbol or "Codable" in symbol:
        return "Foundation (JSON coding, ISO 8601 date formatting, ICU)"
    if "libswift" in dso or "swift_" in symbol:
        return "Swift runtime and standard library (retain/release, allocation, generics, concurrency)"
    if dso.startswith("libc") or "ld-linux" in dso or "libm" in dso:
        return "libc (malloc, memcpy, locks)"
    if dso == "applepay":
        return "applepay's own code"
    return f"other ({dso})"


def store_name(store):
    return "SQLite" if store == "sqlite" else "PostgreSQL"


def headline(lines, decrypt):
    """The server alone (the processor in its own process, SQLite): its CPU per request against the token-opening
    bound, and each figure against its target."""
    def find(scenario):
        return next((l for l in lines if l.get("scenario") == scenario and l.get("store") == "sqlite"
                     and l.get("processor") == "service"), None)
    out = ["### Headline: the server alone (SQLite, the sandbox processor in its own process)", ""]
    payments = find("payments")
    if payments is None:
        return out + ["Not measured in this run (the `load-sqlite-processor-apart` step).", ""]
    bound = decrypt.get("EC_v1", {}).get("bound") if decrypt else None
    floor_ms = 1000 / bound if bound else None
    out += ["The server's own CPU time per request (user + system, from `/proc`, over the scenario), the processor's "
            "HTTP exchange and ledger not included (they are the provider's), against one EC_v1 token's opening "
            "bound from `openssl speed` in the same run (one ECDH + one ECDSA P-256 verification"
            + (f": {floor_ms:.3f} ms" if floor_ms else "") + ").", "",
            "| figure | measured | target |", "|---|---:|---|"]

    def cpu(scenario, target=""):
        line = find(scenario)
        if line is None or "serverCPUMillisecondsPerRequest" not in line:
            return
        ms = line["serverCPUMillisecondsPerRequest"]
        ratio = f" ({ms / floor_ms:.1f} × the bound)" if floor_ms and scenario in ("payments", "replays") else ""
        out.append(f"| server CPU per {scenario} request | {ms:.3f} ms{ratio} | {target} |")
    cpu("payments", "≤ 0.6 ms (about 4 × the bound)")
    cpu("replays")
    cpu("checkouts")
    cpu("products")
    for scenario in ("payments", "checkouts"):
        line = find(scenario)
        written = line.get("serverKBWrittenPerRequest") if line else None
        if isinstance(written, (int, float)):
            out.append(f"| KB the server writes to its files per {scenario} request (the store's WAL and "
                       f"checkpoints) | {written:.1f} KB | |")
    for scenario in ("payments", "replays", "checkouts", "products"):
        line = find(scenario)
        if line:
            out.append(f"| {scenario}/s (p99) | {number(line['requestsPerSecond'])} "
                       f"({line['latencyMs']['p99']:.1f} ms) | {TARGETS.get(scenario, '')} |")
    if decrypt and "EC_v1" in decrypt:
        out.append(f"| EC_v1 token opening, share of OpenSSL's bound | {decrypt['EC_v1']['ratio']:.2f} | ≥ 0.90 |")
    slow = next((l for l in lines if l.get("scenario") == "paymentsSlowProcessor"), None)
    if slow:
        out.append(f"| slow processor (300 ms): payments/s (p99; peak threads, memory) | "
                   f"{number(slow['requestsPerSecond'])} ({slow['latencyMs']['p99']:.0f} ms; "
                   f"{slow.get('serverThreadsMax', '—')} threads, {slow.get('serverRSSMaxKB', 0) / 1024:.0f} MB) | "
                   "≥ 1,500/s, p99 ≤ 500 ms, ≤ 64 threads, ≤ 200 MB |")
    return out + [""]


def number(value):
    return f"{value:,.0f}" if isinstance(value, (int, float)) else "—"


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 64
    results_path, doc_path = sys.argv[1], sys.argv[2]
    lines = []
    with open(results_path) as results:
        for line in results:
            line = line.strip()
            if line.startswith("{"):
                lines.append(json.loads(line))
    machine = next((l for l in lines if l.get("scenario") == "machine"), {})
    decrypt = next((l for l in lines if "EC_v1" in l or "RSA_v1" in l), None)
    out = [BEGIN, f"_Written by `make bench` ({machine.get('date', '?')}): {machine.get('cores', '?')} cores "
           f"({machine.get('cpu', '?')}), {machine.get('kernel', '?')}, load average "
           f"{machine.get('loadAverageBefore', '?')} before the run and {machine.get('loadAverageAfter', '?')} "
           "after; settings `" + machine.get("settings", "?") + "`. Do not edit by hand; the next run replaces "
           "everything between the markers._", ""]
    failed = [l for l in lines if l.get("scenario") == "failed"]
    if failed:
        out += ["**Steps that failed in this run:** " + ", ".join(f"`{l['step']}`" for l in failed), ""]

    out += headline(lines, decrypt)
    out += ["### Token verification and decryption (1 thread)", "",
            "| format | OpenSSL bound, tokens/s per core | applepay, tokens per CPU second | ratio | target |",
            "|---|---:|---:|---:|---|"]
    if decrypt:
        for kind in ("EC_v1", "RSA_v1"):
            if kind in decrypt:
                d = decrypt[kind]
                out.append(f"| {kind} | {number(d['bound'])} | {number(d['tokensPerCPUSecond'])} | "
                           f"{d['ratio']:.2f} | ≥ 0.90 |")
        out += ["", f"Load average at the end of the token bench: {decrypt.get('loadAverage', '?')}."]
    else:
        out.append("| (not measured in this run) | | | | |")

    out += ["", "### Merchant server under load", "",
            "Client CPU share: wrk's user + system CPU time over wall time × cores (the share of the machine the "
            "load generator took from the server). Load average: after the scenario.", "",
            "| scenario | store | processor | requests/s | p50 ms | p99 ms | errors | server CPU ms/request | "
            "client CPU share | load average | target |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for store in ("sqlite", "postgres"):
        for processor in ("service", "inProcess"):
            for scenario in SCENARIOS:
                for l in lines:
                    if l.get("scenario") == scenario and l.get("store") == store and \
                            l.get("processor", "inProcess") == processor:
                        cpu = l.get("serverCPUMillisecondsPerRequest")
                        out.append(
                            f"| {scenario} | {store_name(store)} | "
                            f"{'own process' if processor == 'service' else 'in process'} | "
                            f"{number(l['requestsPerSecond'])} | {l['latencyMs']['p50']:.2f} | "
                            f"{l['latencyMs']['p99']:.2f} | {l['errors']} | "
                            f"{'—' if cpu is None else f'{cpu:.3f}'} | {l['clientCPUShare']:.0%} | "
                            f"{l['loadAverage']} | {TARGETS.get(scenario, '')} |")
    switches = [l for l in lines if l.get("scenario") == "payments" and "contextSwitchesPerPayment" in l]
    if switches:
        out += ["", "Context switches of the server per payment (from `/proc`, over the payments scenario, the "
                "in-process sandbox processor included; all, and in brackets the voluntary ones: a thread waiting "
                "for another, the hand-offs): " + ", ".join(
                    f"{store_name(l['store'])}"
                    f"{' (processor apart)' if l.get('processor') == 'service' else ''} "
                    f"{l['contextSwitchesPerPayment']}"
                    + (f" ({l['voluntarySwitchesPerPayment']})" if "voluntarySwitchesPerPayment" in l else "")
                    for l in switches) + "."]
    out += ["", "Server CPU ms/request: the server's user + system CPU time over the scenario's requests, from "
            "`/proc` (with the processor in process, its HTTP exchange and ledger included), the figure the "
            "machine's noise moves least."]
    outside = [l for l in lines if l.get("scenario") in ("paymentsSlowProcessor", "paymentsUnderNotificationFlood")]
    if outside:
        out += ["", "### Payments while outside parties misbehave (SQLite)", "",
                "paymentsSlowProcessor: the processor answers every charge after 300 ms. "
                "paymentsUnderNotificationFlood: Apple's merchant-token API is a black hole while the notification "
                "URL is flooded. Every payment was checked: answered success with its own order, charged once.", "",
                "| scenario | connections | payments/s | p50 ms | p99 ms | errors | server CPU ms/payment "
                "(processor's) | client CPU share | server threads (peak) | resident memory (peak) | flood | target |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        targets = {"paymentsSlowProcessor": "≥ 1,500/s, p99 ≤ 500 ms, ≤ 64 threads, ≤ 200 MB",
                   "paymentsUnderNotificationFlood": "every payment success, p99 ≤ 1 s"}
        for l in outside:
            flood = l.get("flood")
            flood_text = (f"{number(flood['requests'])} notifications ({number(flood['requestsPerSecond'])}/s), "
                          f"p99 {flood['latencyMs']['p99']:.0f} ms, {flood['non2xx']} non-2xx, "
                          f"{flood['timeouts']} timeouts" if flood else "—")
            server = l.get("serverCPUMillisecondsPerRequest")
            processor = l.get("processorCPUMillisecondsPerRequest")
            cpu_text = (f"{server:.3f}" + (f" ({processor:.3f})" if isinstance(processor, (int, float)) else "")
                        if isinstance(server, (int, float)) else "—")
            share = l.get("clientCPUShare")
            share_text = f"{share:.0%}" if isinstance(share, (int, float)) else "—"
            out.append(f"| {l['scenario']} | {l['connections']} | {number(l['requestsPerSecond'])} | "
                       f"{l['latencyMs']['p50']:.2f} | {l['latencyMs']['p99']:.2f} | {l['errors']} | "
                       f"{cpu_text} | {share_text} | {l.get('serverThreadsMax', '—')} | {l.get('serverRSSMaxKB', 0) / 1024:.0f} MB | "
                       f"{flood_text} | {targets[l['scenario']]} |")
    checks = [l for l in lines if l.get("scenario") == "checks"]
    if checks:
        out += [""]
        for c in checks:
            out.append(f"- {'SQLite' if c['store'] == 'sqlite' else 'PostgreSQL'} checks passed: {c['orders']} "
                       f"payments each paid once, replays byte-identical, {c['paymentsInStore']} payments in the "
                       f"store, descriptors {c['descriptorsBefore']} before and {c['descriptorsAfter']} after, "
                       f"resident memory {c['rssKB'] / 1024:.0f} MB after the run; exit 0 on SIGTERM.")

    soak = next((l for l in lines if l.get("scenario") == "soak"), None)
    out += ["", "### Soak", ""]
    if soak:
        rss, fds = soak["rssKB"], soak["descriptors"]
        out += ["| minutes | requests/s | payments | replays | errors | RSS first third max | RSS last third max | "
                "RSS max | RSS slope | descriptors before / after | threads first / last third max | verdict |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
                f"| {soak['minutes']} | {soak['requestsPerSecond']} | {soak['payments']} | {soak['replays']} | "
                f"{soak['errors']} | {rss['firstThirdMax'] / 1024:.1f} MB | {rss['lastThirdMax'] / 1024:.1f} MB | "
                f"{rss['max'] / 1024:.1f} MB | {rss.get('slopeKBPerMinute', 0) / 1024:+.2f} MB/min | "
                f"{fds['before']} / {fds['after']} | "
                f"{soak.get('threads', {}).get('firstThirdMax', '—')} / {soak.get('threads', {}).get('lastThirdMax', '—')} | "
                f"{'flat, passed' if soak['passed'] else 'FAILED'} |", "",
                f"Load average at the end of the soak: {soak['loadAverage']}."]
    else:
        out.append("Not run this time (`SOAK_MINUTES=0`).")

    if len(sys.argv) == 4:
        try:
            summary = areas(sys.argv[3])
        except OSError:
            summary = []
        if summary:
            out += ["", "### Where the server's CPU goes (payments scenario, SQLite)", "",
                    "`perf record -g` on the server during the payments scenario; self time by area "
                    "(`perf report --no-children --sort dso,symbol`).", "",
                    "| area | share of the server's samples |", "|---|---:|"]
            out += [f"| {name} | {percent:.1f} % |" for name, percent in summary if percent >= 0.5]
    out.append(END)

    with open(doc_path) as doc:
        text = doc.read()
    block = "\n".join(out)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n## Last `make bench` run\n" + block + "\n"
    with open(doc_path, "w") as doc:
        doc.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
