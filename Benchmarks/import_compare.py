#!/usr/bin/env python3
"""strata import against SQLite on the same JSON Lines file.

Generates a JSON Lines file of Artist, Album and Track objects (150,000 by default) with
relationships, albums listed before their artists (forward references), then times

  * `strata import STORE FILE` (the release build; one transaction, durability full), and
  * Python's sqlite3 reading the same file: json.loads per line, INSERT into three tables
    whose relationships are foreign keys stored as keys (with an index on each, as Strata
    keeps every inverse), WAL, synchronous=FULL, one transaction,

and, where the `sqlite3` command-line tool is installed, the same import without Python:
the file loaded into a temporary table with `.import`, then INSERT ... SELECT with SQLite's
JSON functions (`->>`), same tables, indexes and settings — Python's json.loads and per-row
execute are most of the first SQLite figure. Each on a fresh store / database, median of
--runs; every side's object counts are checked after its run (outside the clock). Prints
the times and the ratios (SQLite's time divided by Strata's: above 1.0 Strata is faster).
Strata's figure includes starting the process, as the command-line SQLite's does; Strata
also checks every relationship target and the attribute limits, which the SQLite tables
do not (foreign keys off: the albums come before their artists).

  swift build -c release --scratch-path .build-cli --product strata
  python3 Benchmarks/import_compare.py --strata .build-cli/release/strata [--objects 150000] [--runs 3] [--dir DIR]
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

MODEL = {
    "name": "Music", "version": 1,
    "entities": [
        {"name": "Artist",
         "attributes": [{"name": "artistID", "type": "int", "unique": True},
                        {"name": "name", "type": "string"},
                        {"name": "country", "type": "string", "optional": True}],
         "relationships": [{"name": "albums", "destination": "Album", "inverse": "artist",
                            "toMany": True, "deleteRule": "cascade"}]},
        {"name": "Album",
         "attributes": [{"name": "albumID", "type": "int", "unique": True},
                        {"name": "title", "type": "string"},
                        {"name": "year", "type": "int", "min": 1900, "max": 2100}],
         "relationships": [{"name": "artist", "destination": "Artist", "inverse": "albums"},
                           {"name": "tracks", "destination": "Track", "inverse": "album",
                            "toMany": True, "deleteRule": "cascade"}]},
        {"name": "Track",
         "attributes": [{"name": "trackID", "type": "int", "unique": True},
                        {"name": "title", "type": "string"},
                        {"name": "milliseconds", "type": "int", "min": 0},
                        {"name": "price", "type": "double"},
                        {"name": "explicit", "type": "bool"}],
         "relationships": [{"name": "album", "destination": "Album", "inverse": "tracks"}]},
    ],
}


def generate(path, objects, seed=7):
    """Artists 4%, albums 16%, tracks 80%; the albums come first and name artists that follow."""
    rng = random.Random(seed)
    artists = max(1, objects * 4 // 100)
    albums = max(1, objects * 16 // 100)
    tracks = objects - artists - albums
    countries = ["AU", "GB", "US", "DE", "FR", "JP", None]
    with open(path, "w") as f:
        for a in range(1, albums + 1):
            f.write(json.dumps({"entity": "Album", "values": {
                "albumID": a, "title": f"Album number {a}", "year": 1950 + rng.randrange(70),
                "artist": rng.randrange(1, artists + 1)}}) + "\n")
        for a in range(1, artists + 1):
            f.write(json.dumps({"entity": "Artist", "values": {
                "artistID": a, "name": f"Artist {a}", "country": countries[rng.randrange(len(countries))]}}) + "\n")
        for t in range(1, tracks + 1):
            f.write(json.dumps({"entity": "Track", "values": {
                "trackID": t, "title": f"Track {t} of the set", "milliseconds": rng.randrange(60_000, 600_000),
                "price": rng.randrange(50, 200) / 100, "explicit": rng.random() < 0.1,
                "album": rng.randrange(1, albums + 1)}}) + "\n")
    return {"artists": artists, "albums": albums, "tracks": tracks}


def sqlite_import(data, database):
    start = time.perf_counter()
    db = sqlite3.connect(database, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA foreign_keys=OFF")  # forward references: keys stored as they come
    db.executescript(SCHEMA_SQL)
    columns = {"Artist": ("artist", ["artistID", "name", "country"]),
               "Album": ("album", ["albumID", "title", "year", "artist"]),
               "Track": ("track", ["trackID", "title", "milliseconds", "price", "explicit", "album"])}
    statements = {e: f"INSERT INTO {t} ({', '.join(c)}) VALUES ({', '.join('?' * len(c))})" for e, (t, c) in columns.items()}
    db.execute("BEGIN")
    with open(data, "rb") as f:
        for line in f:
            obj = json.loads(line)
            entity = obj["entity"]
            values = obj["values"]
            db.execute(statements[entity], [values.get(k) for k in columns[entity][1]])
    db.execute("COMMIT")
    db.close()
    return time.perf_counter() - start


SCHEMA_SQL = """
    CREATE TABLE artist (artistID INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
    CREATE TABLE album (albumID INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER NOT NULL,
                        artist INTEGER REFERENCES artist(artistID));
    CREATE TABLE track (trackID INTEGER PRIMARY KEY, title TEXT NOT NULL, milliseconds INTEGER NOT NULL,
                        price REAL NOT NULL, explicit INTEGER NOT NULL, album INTEGER REFERENCES album(albumID));
    CREATE INDEX album_artist ON album(artist);
    CREATE INDEX track_album ON track(album);
"""


def sqlite_cli_import(sqlite3_cli, data, database):
    """The same import in the sqlite3 shell: no Python in the loop."""
    script = "\n".join([
        "PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;", "PRAGMA foreign_keys=OFF;", SCHEMA_SQL,
        "CREATE TEMP TABLE raw(j TEXT);", ".mode tabs", f".import {data} raw", "BEGIN;",
        "INSERT INTO artist SELECT j->>'$.values.artistID', j->>'$.values.name', j->>'$.values.country' "
        "FROM raw WHERE j->>'$.entity' = 'Artist';",
        "INSERT INTO album SELECT j->>'$.values.albumID', j->>'$.values.title', j->>'$.values.year', j->>'$.values.artist' "
        "FROM raw WHERE j->>'$.entity' = 'Album';",
        "INSERT INTO track SELECT j->>'$.values.trackID', j->>'$.values.title', j->>'$.values.milliseconds', "
        "j->>'$.values.price', j->>'$.values.explicit', j->>'$.values.album' FROM raw WHERE j->>'$.entity' = 'Track';",
        "COMMIT;", ""])
    start = time.perf_counter()
    subprocess.run([sqlite3_cli, database], input=script.encode(), check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def sqlite_counts(database):
    db = sqlite3.connect(database)
    counts = {entity: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
              for entity, table in (("artists", "artist"), ("albums", "album"), ("tracks", "track"))}
    db.close()
    return counts


def strata_counts(strata, store):
    counts = {}
    for entity, name in (("artists", "Artist"), ("albums", "Album"), ("tracks", "Track")):
        out = subprocess.run([strata, "query", store, "--entity", name, "--count"], check=True, capture_output=True, text=True)
        counts[entity] = int(out.stdout.strip())
    return counts


def check(side, counts, expected):
    if counts != expected:
        sys.exit(f"{side} holds {counts}, expected {expected}")


def strata_import(strata, model, data, store):
    subprocess.run([strata, "create", store, "--model", model], check=True, stdout=subprocess.DEVNULL)
    start = time.perf_counter()
    subprocess.run([strata, "import", store, data, "--progress", "none"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strata", default=".build-cli/release/strata")
    parser.add_argument("--objects", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the files go (default: a temporary directory)")
    args = parser.parse_args()
    if not os.access(args.strata, os.X_OK):
        sys.exit(f"{args.strata} is not an executable; build it with swift build -c release --product strata")
    root = tempfile.mkdtemp(prefix="strata-import-", dir=args.dir)
    try:
        model = os.path.join(root, "model.json")
        with open(model, "w") as f:
            json.dump(MODEL, f)
        data = os.path.join(root, "data.jsonl")
        counts = generate(data, args.objects)
        size = os.path.getsize(data)
        expected = {"artists": counts["artists"], "albums": counts["albums"], "tracks": counts["tracks"]}
        sqlite3_cli = shutil.which("sqlite3")
        strata_times, sqlite_times, cli_times = [], [], []
        for run in range(args.runs):
            store = os.path.join(root, f"store-{run}.strata")
            database = os.path.join(root, f"db-{run}.sqlite")
            cli_database = os.path.join(root, f"cli-{run}.sqlite")

            def run_strata():
                strata_times.append(strata_import(args.strata, model, data, store))
                check("the Strata store", strata_counts(args.strata, store), expected)

            def run_sqlite():
                sqlite_times.append(sqlite_import(data, database))
                check("the SQLite database (Python)", sqlite_counts(database), expected)

            def run_cli():
                if sqlite3_cli:
                    cli_times.append(sqlite_cli_import(sqlite3_cli, data, cli_database))
                    check("the SQLite database (sqlite3 shell)", sqlite_counts(cli_database), expected)

            # Rotate which goes first, so none always finds a warm page cache.
            sides = [run_strata, run_sqlite, run_cli]
            for side in sides[run % 3:] + sides[:run % 3]:
                side()
            shutil.rmtree(store)
            for path in (database, cli_database):
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(path + suffix):
                        os.remove(path + suffix)
        strata = statistics.median(strata_times)
        sqlite = statistics.median(sqlite_times)
        print(f"objects: {args.objects} ({counts['artists']} artists, {counts['albums']} albums, {counts['tracks']} tracks), "
              f"{size / 1e6:.1f} MB of JSON Lines, {args.runs} runs")
        print(f"strata import:  {strata:.3f} s  ({args.objects / strata:,.0f} objects/s)  runs {', '.join(f'{t:.3f}' for t in strata_times)}")
        print(f"python sqlite3: {sqlite:.3f} s  ({args.objects / sqlite:,.0f} objects/s)  runs {', '.join(f'{t:.3f}' for t in sqlite_times)}")
        print(f"ratio (python sqlite3 / strata): {sqlite / strata:.2f}  (above 1.0: strata is faster)")
        if cli_times:
            cli = statistics.median(cli_times)
            print(f"sqlite3 shell:  {cli:.3f} s  ({args.objects / cli:,.0f} objects/s)  runs {', '.join(f'{t:.3f}' for t in cli_times)}")
            print(f"ratio (sqlite3 shell / strata): {cli / strata:.2f}  (above 1.0: strata is faster)")
        else:
            print("sqlite3 shell: not installed (the comparison without Python is skipped)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
