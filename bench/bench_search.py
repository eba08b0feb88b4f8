"""Search latency over a store of 200,000 messages: p50 and p99 of 20 varied queries.

    make bench-search          (or: python bench/bench_search.py --messages 200000)

The store is built through the library (appends of 1,000 messages per batch, so the
indexes are maintained by the same triggers as any write) from generated conversations:
English prose from several topics with a long-tailed vocabulary, code-like tool output,
and about one message in twelve in Japanese or Chinese. Each query runs once to warm the
cache, then `--repeat` times; the percentiles are over every timed run of every query.
Targets: p50 < 10 ms, p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import apsw

import sessiondb

TOPICS = {
    "code": "test fails flaky upload thread assertion finaliser race python function module import error "
            "traceback exception pytest fixture database migration schema index query commit rollback "
            "writer lock timeout retry refactor deploy release branch merge review compile build docker "
            "container kubernetes cluster latency memory leak profiler benchmark cache invalidation",
    "travel": "kyoto temples shrine fushimi inari market lunch dinner hotel ryokan train shinkansen ticket "
              "itinerary morning evening museum garden autumn leaves cherry blossom quiet village ohara "
              "bamboo arashiyama osaka nara deer castle tokyo flight airport luggage",
    "cooking": "recipe dough flour butter oven bake minutes sourdough starter hydration knead proof crust "
               "sauce garlic onion simmer stir pan roast chicken vegetables salt pepper lemon herbs café "
               "crème brûlée purée jalapeño",
    "finance": "budget invoice payment quarterly revenue expenses forecast spreadsheet tax receipt account "
               "balance transfer subscription pricing margin customer churn report dashboard",
    "agent": "session transcript compaction summary context window tokens model provider tool call result "
             "memory recall search archive resume rewind branch lineage profile gateway cron notification",
}
COMMON = ("the a and to of in that it is for on with as was this but be have not are at by "
          "from you we can will just so if then what when there which about would could").split()
CJK = [
    "明日の東京の天気は晴れです", "京都の寺を三日間で回りたい", "データベースのロックが解除されない",
    "テストが時々失敗する原因を調べてください", "今日は会議が三つあります", "这个函数的返回值不对",
    "请帮我总结一下这次会话的内容", "服务器的内存占用太高了", "東京駅から京都駅まで新幹線で行きます",
    "検索インデックスを再構築しました", "天気予報によると午後から雨", "数据库迁移已经完成",
]
CODE = ["def {w}(path):\n    with open(path) as f:\n        return f.read()  # {w2}",
        "Traceback (most recent call last):\n  File \"{w}.py\", line 42\n{w2}Error: {w3} failed",
        "$ pytest -q tests/test_{w}.py\n..F.\nFAILED test_{w2} - AssertionError: {w3}"]


def vocabulary(rng: random.Random) -> dict[str, list[str]]:
    # A long tail of rarer words per topic: real transcripts are mostly rare words.
    vocab = {}
    for topic, words in TOPICS.items():
        base = words.split()
        rare = [f"{rng.choice(base)}{rng.choice(['s', 'ed', 'ing', 'er', 'ly', 'ment', 'ness'])}" for _ in range(200)]
        rare += ["".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
                 for _ in range(400)]
        vocab[topic] = base + rare
    return vocab


def sentence(rng: random.Random, words: list[str]) -> str:
    out = []
    for _ in range(rng.randint(6, 18)):
        if rng.random() < 0.45:
            out.append(rng.choice(COMMON))
        else:
            # Zipf-like: early words of the list far more often than late ones.
            out.append(words[min(len(words) - 1, int(rng.paretovariate(1.1)) - 1)])
    text = " ".join(out)
    return text[0].upper() + text[1:] + rng.choice([".", ".", "?", "!"])


def message(rng: random.Random, vocab: dict[str, list[str]], topic: str, role: str) -> dict:
    words = vocab[topic]
    if role == "tool":
        text = rng.choice(CODE).format(w=rng.choice(words), w2=rng.choice(words), w3=rng.choice(words))
        return {"role": "tool", "content": text, "tool_name": "shell"}
    if rng.random() < 1 / 12:
        text = "".join(rng.choice(CJK) + "。" for _ in range(rng.randint(1, 4)))
    else:
        text = " ".join(sentence(rng, words) for _ in range(rng.randint(1, 5)))
    return {"role": role, "content": text}


def build(path: Path, total: int, per_session: int = 100, seed: int = 11) -> float:
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    roles = ["user", "assistant", "assistant", "tool"]
    started = time.perf_counter()
    with sessiondb.open_store(path, durability="normal") as store:
        made = 0
        while made < total:
            topic = rng.choice(list(TOPICS))
            sid = store.create_session(rng.choice(["cli", "telegram", "desktop", "cron"]),
                                       title=f"{topic} {made // per_session}").id
            msgs = [message(rng, vocab, topic, rng.choice(roles)) for _ in range(min(per_session, total - made))]
            for i in range(0, len(msgs), 1000):
                store.append(sid, msgs[i:i + 1000])
            made += len(msgs)
    return time.perf_counter() - started


QUERIES = [
    ("one common topic word", "kyoto", {}),
    ("two words", "flaky test", {}),
    ("phrase", '"fushimi inari"', {}),
    ("OR", "sourdough OR dough", {}),
    ("NOT", "database -migration", {}),
    ("prefix", "compact*", {}),
    ("short prefix", "re*", {}),
    ("rare word", "hydration", {}),
    ("three words", "session transcript summary", {}),
    ("frequent words", "the and", {}),
    ("accents folded", "creme brulee", {}),
    ("no match", "zzyzx", {}),
    ("CJK trigram", "東京駅", {}),
    ("CJK two chars (LIKE)", "天気", {}),
    ("absent, 2 chars (full scan)", "qz", {"substring": True}),
    ("substring", "aceback", {"substring": True, "include_tools": True}),
    ("with tools", "pytest", {"include_tools": True}),
    ("filtered by source", "budget", {"source": "cron"}),
    ("filtered by role", "kyoto", {"role": "user"}),
    ("malformed", '(( "unbalanced OR -', {}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--store", type=Path, help="build into (or reuse) this file instead of a temporary one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sessiondb-bench-") as tmp:
        path = args.store or Path(tmp) / "search.db"
        if not path.exists():
            took = build(path, args.messages)
            print(f"built {args.messages:,} messages in {took:.1f} s ({args.messages / took:,.0f} msg/s)", flush=True)
        with sessiondb.open_store(path) as store:
            stats = store.stats()
            print(f"store: {stats.messages:,} messages in {stats.sessions:,} sessions, {stats.size_bytes / 2**20:.0f} MiB")
            every: list[float] = []
            print(f"\n{'query':<28} {'text':<26} {'hits':>4} {'median ms':>10} {'max ms':>8}")
            for label, text, options in QUERIES:
                hits = store.search(text, **options)  # warm-up
                times = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    store.search(text, **options)
                    times.append((time.perf_counter() - started) * 1000)
                every += times
                print(f"{label:<28} {text:<26} {len(hits):>4} {statistics.median(times):>10.2f} {max(times):>8.2f}")
            every.sort()
            p50 = every[len(every) // 2]
            p99 = every[min(len(every) - 1, int(len(every) * 0.99))]
            print(f"\n{len(QUERIES)} queries x {args.repeat} runs: p50 {p50:.2f} ms (target < 10), "
                  f"p99 {p99:.2f} ms (target < 50)")
            print(f"SQLite {apsw.sqlite_lib_version()}, APSW {apsw.apsw_version()}")


if __name__ == "__main__":
    main()
