#!/usr/bin/env python3
"""SQLite's side of the `query-fetch` benchmark: the same rows, the same queries.

The Swift benchmark (Benchmarks/Queries/SQLiteComparison.swift) runs this script with
`/usr/bin/env python3` and writes what to do as JSON on its standard input:

    {"seed": 407704164986, "sizes": [100000, 1000000], "runs": 7, "target_seconds": 0.002,
     "queries": [{"name": "...", "sql": "SELECT ...", "kind": "fetch" | "count", "ordered": false}, ...]}

For each size it builds an in-memory SQLite database (`:memory:`; Strata's generations are
in memory too) holding the same rows as QueryData.swift, generated the same way (SplitMix64
with the same seed, three draws per row), then times every query twice: on the bare table
("no index": only the rowid), then after CREATE INDEX on itemID (unique), category, price
and tag ("indexed"). Loading and indexing are timed apart and never counted in a query.

A query's run is the median-ready time of one execution: `fetchall()` for fetches (every
column of every row made into Python tuples, as Strata's fetch makes its results), the one
value for counts. A query faster than `target_seconds` runs several times in a row within
one run and the run is their mean. One untimed execution comes first (warm-up, and the
check of the result). It prints JSON on standard output:

    {"sqlite_version": "3.40.1", "python_version": "3.11.7", "database": "in-memory",
     "sizes": [{"rows": N, "load_seconds": ..., "index_seconds": ...,
                "configs": {"no index": {NAME: {"runs_ms": [...], "repetitions": k,
                                                "count": ..., "checksum": ..., "first": [...]}}, "indexed": {...}}}]}

`count` is the number of rows (or the counted value), `checksum` the sum of their itemIDs,
`first` the itemIDs of the first 50 rows of an ordered query, in order: the Swift side
checks them against Strata's answers, so both sides provably ran the same query on the same
data.

Run alone for a look: `python3 sqlite_compare.py < spec.json`.
"""

import json
import platform
import sqlite3
import sys
import time

MASK = (1 << 64) - 1


def splitmix(seed):
    """SplitMix64, as SplitMix64 in Sources/Strata/Support: an endless stream of 64-bit values."""
    state = seed & MASK
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def rows(count, seed):
    """(id, itemID, name, price, category, tag) of items 0..<count, as QueryData.values."""
    random = splitmix(seed)
    for k in range(count):
        a = next(random)
        b = next(random)
        c = next(random)
        yield (k + 1, k, "item %d" % k, (a % 100000) / 100, b % 1000, "t%d" % (c % 1000))


INDEXES = [
    "CREATE UNIQUE INDEX item_itemID ON item(itemID)",
    "CREATE INDEX item_category ON item(category)",
    "CREATE INDEX item_price ON item(price)",
    "CREATE INDEX item_tag ON item(tag)",
]

ITEM_ID_COLUMN = 1  # in SELECT * order: id, itemID, name, price, category, tag


def run_query(db, query):
    cursor = db.execute(query["sql"])
    if query["kind"] == "count":
        return cursor.fetchone()[0]
    return cursor.fetchall()


def describe(query, result):
    if query["kind"] == "count":
        return {"count": result, "checksum": 0, "first": []}
    ids = [row[ITEM_ID_COLUMN] for row in result]
    return {"count": len(ids), "checksum": sum(ids), "first": ids[:50] if query.get("ordered") else []}


def time_query(db, query, runs, target_seconds):
    start = time.perf_counter()
    result = run_query(db, query)
    single = time.perf_counter() - start
    facts = describe(query, result)
    del result
    repetitions = max(1, min(1000, int(target_seconds / max(single, 1e-9))))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(repetitions):
            run_query(db, query)
        times.append((time.perf_counter() - start) / repetitions * 1e3)
    facts.update({"runs_ms": times, "repetitions": repetitions})
    return facts


def measure(size, spec):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, itemID INTEGER NOT NULL, name TEXT NOT NULL, "
               "price REAL NOT NULL, category INTEGER NOT NULL, tag TEXT NOT NULL)")
    start = time.perf_counter()
    with db:
        db.executemany("INSERT INTO item VALUES (?, ?, ?, ?, ?, ?)", rows(size, spec["seed"]))
    load_seconds = time.perf_counter() - start
    configs = {}
    configs["no index"] = {q["name"]: time_query(db, q, spec["runs"], spec["target_seconds"]) for q in spec["queries"]}
    start = time.perf_counter()
    with db:
        for statement in INDEXES:
            db.execute(statement)
        db.execute("ANALYZE")
    index_seconds = time.perf_counter() - start
    configs["indexed"] = {q["name"]: time_query(db, q, spec["runs"], spec["target_seconds"]) for q in spec["queries"]}
    db.close()
    return {"rows": size, "load_seconds": load_seconds, "index_seconds": index_seconds, "configs": configs}


def main():
    spec = json.load(sys.stdin)
    result = {
        "sqlite_version": sqlite3.sqlite_version,
        "python_version": platform.python_version(),
        "database": "in-memory",
        "sizes": [measure(size, spec) for size in spec["sizes"]],
    }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
