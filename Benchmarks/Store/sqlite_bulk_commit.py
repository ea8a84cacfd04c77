#!/usr/bin/env python3
"""SQLite's side of the `bulk-commit` benchmark: the same catalogue, committed the same way.

The Swift benchmark (Benchmarks/Store/BulkCommit.swift) runs this script with
`/usr/bin/env python3` and writes what to do as JSON on its standard input:

    {"directory": "/tmp/...", "artists": 76923, "artists_per_batch": 769,
     "albums_per_artist": 2, "songs_per_album": 5, "rounds": 3}

For each round and each `synchronous` setting (FULL, then OFF), it creates a fresh database
file in `directory` (WAL journal, foreign keys enforced) with the tables

    artist(id INTEGER PRIMARY KEY, artist_id INTEGER NOT NULL UNIQUE, name TEXT NOT NULL)
    album(id INTEGER PRIMARY KEY, album_id INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,
          year INTEGER NOT NULL, artist INTEGER NOT NULL REFERENCES artist(id))
    song(id INTEGER PRIMARY KEY, song_id INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,
         duration INTEGER NOT NULL, rating REAL, album INTEGER NOT NULL REFERENCES album(id))

and indexes on album.artist and song.album (Strata keeps both sides of each relationship,
so finding an artist's albums or an album's songs is direct there too). The rows are those
of the Swift side (artist a has albums 2a-1 and 2a, album b has songs 5b-4 ... 5b; names
"Artist a", "Album b", "Song s"; year 1960 + b % 60; duration 120000 + (s * 7919) % 240000;
rating NULL when s % 4 == 0, else (s % 50) / 10). Each change set of the Swift side — the
objects of `artists_per_batch` artists — is one transaction here: `executemany` per table,
then COMMIT. The rows of every transaction are built before the clock starts, as the Swift
side builds its change sets first; Python's own work per row (binding values) is counted,
as Strata's encoding is.

It prints JSON on standard output:

    {"sqlite_version": "3.40.1", "python_version": "3.11.2",
     "modes": {"full": {"seconds": [...], "processor_seconds": [...], "objects": N},
               "off": {...}}}

`objects` is the number of rows in the three tables after the last round (checked by the
Swift side).
"""

import json
import os
import platform
import sqlite3
import sys
import time


def batches(spec):
    artists = spec["artists"]
    per = spec["artists_per_batch"]
    albums_per = spec["albums_per_artist"]
    songs_per = spec["songs_per_album"]
    first = 1
    while first <= artists:
        last = min(first + per - 1, artists)
        artist_rows, album_rows, song_rows = [], [], []
        for a in range(first, last + 1):
            artist_rows.append((a, a, "Artist %d" % a))
            for k in range(albums_per):
                b = (a - 1) * albums_per + k + 1
                album_rows.append((b, b, "Album %d" % b, 1960 + b % 60, a))
                for j in range(songs_per):
                    s = (b - 1) * songs_per + j + 1
                    rating = None if s % 4 == 0 else (s % 50) / 10
                    song_rows.append((s, s, "Song %d" % s, 120000 + (s * 7919) % 240000, rating, b))
        yield artist_rows, album_rows, song_rows
        first = last + 1


def commit_all(path, synchronous, work):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=%s" % synchronous)
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("CREATE TABLE artist(id INTEGER PRIMARY KEY, artist_id INTEGER NOT NULL UNIQUE, name TEXT NOT NULL)")
    db.execute("CREATE TABLE album(id INTEGER PRIMARY KEY, album_id INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,"
               " year INTEGER NOT NULL, artist INTEGER NOT NULL REFERENCES artist(id))")
    db.execute("CREATE TABLE song(id INTEGER PRIMARY KEY, song_id INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,"
               " duration INTEGER NOT NULL, rating REAL, album INTEGER NOT NULL REFERENCES album(id))")
    db.execute("CREATE INDEX album_artist ON album(artist)")
    db.execute("CREATE INDEX song_album ON song(album)")
    wall = time.perf_counter()
    processor = time.process_time()
    for artist_rows, album_rows, song_rows in work:
        db.execute("BEGIN")
        db.executemany("INSERT INTO artist VALUES (?, ?, ?)", artist_rows)
        db.executemany("INSERT INTO album VALUES (?, ?, ?, ?, ?)", album_rows)
        db.executemany("INSERT INTO song VALUES (?, ?, ?, ?, ?, ?)", song_rows)
        db.execute("COMMIT")
    seconds = time.perf_counter() - wall
    processor_seconds = time.process_time() - processor
    objects = sum(db.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in ("artist", "album", "song"))
    db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return seconds, processor_seconds, objects


def main():
    spec = json.load(sys.stdin)
    work = list(batches(spec))
    modes = {"full": {"seconds": [], "processor_seconds": [], "objects": 0},
             "off": {"seconds": [], "processor_seconds": [], "objects": 0}}
    path = os.path.join(spec["directory"], "catalogue.sqlite")
    for _ in range(spec["rounds"]):
        for mode in ("full", "off"):
            seconds, processor_seconds, objects = commit_all(path, mode.upper(), work)
            modes[mode]["seconds"].append(seconds)
            modes[mode]["processor_seconds"].append(processor_seconds)
            modes[mode]["objects"] = objects
    json.dump({"sqlite_version": sqlite3.sqlite_version, "python_version": platform.python_version(), "modes": modes}, sys.stdout)


if __name__ == "__main__":
    main()
