"""Recall measured on LoCoMo: does a question find the turns that answer it? (`make bench-recall`)

LoCoMo (Maharana et al., ACL 2024; github.com/snap-research/locomo, `data/locomo10.zip`)
is the conversational-memory benchmark the agent-memory field reports on. This reads the
development conversations from `../shared/recall/locomo-dev/` beside the project's
checkout (a worktree's main checkout; or --data DIR) and skips, saying where to get them, when they are absent; the data is never
copied into the project.

Each conversation is one store (an agent's memory), one session, each turn one message
"<speaker>: <text>" (a shared photo's caption appended) whose uid is its turn id, stored
at its session's time. Every
question outside category 5 (adversarial: no answer in the conversation) is asked as an
agent would, as written, and counts a hit when one of its evidence turns is among the
first k results: hit@5, hit@10, all@10 (every evidence turn in the first 10), overall and
per category, with the p50 and p99 time of one call. Modes: the query language
(`store.search(question)`) and lexical recall (`store.recall(question)`), then with an
embedder (--embedder, default WordLlama, whose weights ship in its package: skipped with a
sentence when it is not installed) its vectors alone (recall with the words' share of the
fused score set to nothing) and hybrid recall (`store.recall` as it ranks). Backends:
SQLite and PostgreSQL (a private server from the machine's binaries, tests/pgserver.py;
skipped with a sentence when none can be started).

At scale (--copies N): the conversations stored N times over in one SQLite store (44: 201,740
messages, a session per copy), 300 of the questions (a fixed sample) asked by search and by
recall: p50 and p99 of one call, and hit@10 counting an evidence turn of any copy.

    python bench/recall.py [--data DIR] [--backend sqlite|postgres|both] [--copies N] [--embedder NAME]
                           [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import sessiondb  # noqa: E402
from sessiondb import InvalidInput  # noqa: E402
from sessiondb import recall as questions_module  # noqa: E402
from sessiondb.embedding import embedder_named  # noqa: E402



def _checkout() -> Path:
    """The project's main checkout: ROOT, or the checkout a git worktree at ROOT belongs to."""
    marker = ROOT / ".git"
    if marker.is_file() and (line := marker.read_text(encoding="utf-8").strip()).startswith("gitdir:"):
        gitdir = Path(line.removeprefix("gitdir:").strip())  # <checkout>/.git/worktrees/<name>
        if gitdir.parent.name == "worktrees":
            return gitdir.parent.parent.parent
    return ROOT


DATA = _checkout().parent / "shared" / "recall" / "locomo-dev"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: mode -> (the store's method, the share of the fused score the meaning carries: None as
#: recall has it; sessiondb.recall.MEANING_WEIGHT); the last two need an embedder.
MODES = {"query language": ("search", None), "lexical recall": ("recall", None)}
MEANING_MODES = {"vectors alone": ("recall", 1.0), "hybrid recall": ("recall", None)}


def conversations(data: Path) -> list[tuple[str, list[tuple[str, str, float]], list[dict]]]:
    """(name, [(turn id, message text, time)], questions) of each conversation in `data`."""
    found = []
    for path in sorted(data.glob("*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        turns = []
        sessions = sorted((int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1))
        for n in sessions:
            # The session's time ("1:56 pm on 8 May, 2023"), a second more for each turn.
            began = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
            began = began.replace(tzinfo=timezone.utc).timestamp()
            for k, turn in enumerate(conv[f"session_{n}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turns.append((turn["dia_id"], text, began + k))
        questions = [q for q in conv["qa"] if q.get("category") in CATEGORIES and q.get("evidence")]
        found.append((path.stem, turns, questions))
    return found


def measure(open_store, data: list, modes: dict[str, tuple[str, float | None]] = MODES) -> dict[str, dict]:
    """The figures of every mode over every conversation, stores opened by `open_store(name)`."""
    results: dict[str, dict] = {}
    kept = questions_module.MEANING_WEIGHT
    for mode, (method, weight) in modes.items():
        questions_module.MEANING_WEIGHT = kept if weight is None else weight
        rows, times = [], []
        for name, turns, questions in data:
            with open_store(name) as store:
                if not store.list_sessions(limit=1).items:
                    session = store.create_session("locomo", session_id=name)
                    store.append(session.id, [{"uid": uid, "role": "user", "content": text, "timestamp": at}
                                              for uid, text, at in turns])
                store.recall("warm up")  # the indexes caught up (the vectors computed) before any call is timed
                ask = getattr(store, method)
                for q in questions:
                    started = time.perf_counter()
                    hits = ask(str(q["question"]), limit=10)
                    times.append(time.perf_counter() - started)
                    found = [h.uid for h in hits]
                    evidence = set(q["evidence"])
                    rows.append((q["category"], bool(evidence & set(found[:5])), bool(evidence & set(found)),
                                 evidence <= set(found)))
        results[mode] = figures(rows, times)
    questions_module.MEANING_WEIGHT = kept
    return results


def figures(rows: list[tuple[int, bool, bool, bool]], times: list[float]) -> dict:
    def rates(selected: list) -> dict:
        n = len(selected)
        return {"questions": n, "hit@5": sum(r[1] for r in selected) / n, "hit@10": sum(r[2] for r in selected) / n,
                "all@10": sum(r[3] for r in selected) / n}
    ordered = sorted(times)
    return {"overall": rates(rows),
            "categories": {label: rates([r for r in rows if r[0] == c]) for c, label in CATEGORIES.items()},
            "p50_ms": statistics.median(ordered) * 1000, "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] * 1000}


def sqlite_stores(scratch: Path, embedder=None):
    return lambda name: sessiondb.open_store(scratch / f"{name}.db", embedder=embedder)


def at_scale(scratch: Path, data: list, copies: int, embedder=None) -> dict[str, dict]:
    """Search and recall over the conversations stored `copies` times in one SQLite store
    (and hybrid recall, with an embedder)."""
    asked = random.Random(7).sample([q for _, _, questions in data for q in questions], 300)
    found: dict[str, dict] = {}
    with sessiondb.open_store(scratch / "scale.db") as store:
        for copy in range(copies):
            for name, turns, _ in data:
                session = store.create_session("locomo", session_id=f"{name}-{copy}")
                batch = [{"uid": f"{copy}:{uid}", "role": "user", "content": text, "timestamp": at}
                         for uid, text, at in turns]
                for start in range(0, len(batch), 1000):
                    store.append(session.id, batch[start:start + 1000])
        store.search("warm")  # the index caught up before any call is timed
        found.update(_asked(store, asked, MODES, copies * sum(len(t) for _, t, _ in data)))
    if embedder is not None:
        with sessiondb.open_store(scratch / "scale.db", embedder=embedder) as store:
            store.recall("warm")  # every vector computed before any call is timed
            found.update(_asked(store, asked, {"hybrid recall": MEANING_MODES["hybrid recall"]},
                                copies * sum(len(t) for _, t, _ in data)))
    return found


def _asked(store, asked: list[dict], modes: dict, messages: int) -> dict[str, dict]:
    found = {}
    for mode, (method, _) in modes.items():
        times, hits = [], 0
        for q in asked:
            started = time.perf_counter()
            found_uids = [h.uid.split(":", 1)[1] for h in getattr(store, method)(str(q["question"]), limit=10)]
            times.append(time.perf_counter() - started)
            hits += bool(set(q["evidence"]) & set(found_uids))
        ordered = sorted(times)
        found[mode] = {"messages": messages, "questions": len(asked), "hit@10": hits / len(asked),
                       "p50_ms": statistics.median(ordered) * 1000,
                       "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] * 1000}
    return found


def report(backend: str, results: dict[str, dict]) -> None:
    print(f"\n{backend}")
    header = f"  {'mode':<16} {'category':<12} {'n':>5} {'hit@5':>6} {'hit@10':>7} {'all@10':>7}"
    print(header + f" {'p50 ms':>7} {'p99 ms':>7}")
    for mode, result in results.items():
        for label, rates in [("overall", result["overall"]), *result["categories"].items()]:
            line = (f"  {mode:<16} {label:<12} {rates['questions']:>5} {rates['hit@5']:>6.3f} "
                    f"{rates['hit@10']:>7.3f} {rates['all@10']:>7.3f}")
            if label == "overall":
                line += f" {result['p50_ms']:>7.2f} {result['p99_ms']:>7.2f}"
            print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--copies", type=int, help="also measure SQLite with the conversations stored N times over")
    parser.add_argument("--embedder", default="wordllama",
                        help="the embedder of the vector modes (sessiondb.embedding)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if not args.data.is_dir() or not any(args.data.glob("*.json")):
        print(f"bench-recall: skipped, no LoCoMo conversations in {args.data}. Get LoCoMo from "
              "github.com/snap-research/locomo (data/locomo10.zip, folder locomo10_v2), put the development "
              "conversations' JSON files there, or pass --data DIR.")
        return 0
    data = conversations(args.data)
    print(f"LoCoMo: {len(data)} conversations, {sum(len(t) for _, t, _ in data):,} turns, "
          f"{sum(len(q) for _, _, q in data):,} questions (category 5 left out), from {args.data}")
    everything: dict[str, dict] = {}
    try:
        embedder = embedder_named(args.embedder)
    except InvalidInput as exc:
        embedder = None
        print(f"the vector modes: skipped, {exc}")
    else:
        everything["embedder"] = {"name": embedder.name, "revision": embedder.revision,
                                  "dimensions": embedder.dimensions}
        print(f"embedder: {embedder.name} {embedder.revision}, {embedder.dimensions} dimensions")
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="sessiondb-recall-") as scratch:
            everything["sqlite"] = measure(sqlite_stores(Path(scratch)), data)
            if embedder is not None:  # the same stores, each message's vector computed at the warm-up
                everything["sqlite"].update(measure(sqlite_stores(Path(scratch), embedder), data, MEANING_MODES))
        report("SQLite", everything["sqlite"])
        if args.copies:
            with tempfile.TemporaryDirectory(prefix="sessiondb-recall-") as scratch:
                everything["sqlite at scale"] = at_scale(Path(scratch), data, args.copies, embedder)
            for mode, figures_ in everything["sqlite at scale"].items():
                print(f"  at scale, {figures_['messages']:,} messages, {mode}: hit@10 (any copy) "
                      f"{figures_['hit@10']:.3f}, p50 {figures_['p50_ms']:.1f} ms, p99 {figures_['p99_ms']:.1f} ms")
    if args.backend in ("postgres", "both"):
        import pgserver
        try:
            server = pgserver.start_server()
        except pgserver.ServerUnavailable as exc:
            print(f"\nPostgreSQL: skipped, no server could be started here ({exc})")
        else:
            try:
                url = server.url()
                everything["postgres"] = measure(
                    lambda name: sessiondb.open_store(url, schema="locomo_" + name.replace("-", "_")), data)
                if embedder is not None:
                    everything["postgres"].update(measure(lambda name: sessiondb.open_store(
                        url, schema="locomo_" + name.replace("-", "_"), embedder=embedder), data, MEANING_MODES))
            finally:
                server.destroy()
            report("PostgreSQL", everything["postgres"])
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
