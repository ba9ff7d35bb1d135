"""The limits of ``skewbench advise`` (one place: the readers, the checks and the help text use
them).  Beyond any of them the command refuses with one line and exit status 2."""

from skewbench.grouping.params import MAX_SOURCES, MAX_WORKERS

#: the largest key file read, in bytes (after decompression)
MAX_FILE_BYTES = 1 << 30
#: the most lines, CSV or Parquet rows, or key,count pairs read
MAX_ROWS = 10_000_000
#: the longest key, in bytes of UTF-8
MAX_KEY_BYTES = 4096
#: the largest count of one key,count pair; their sum stays exact in floating point
MAX_COUNT = 10**12
MAX_TOTAL = 1 << 53
# the largest parallelism, MAX_WORKERS, and the most upstream instances feeding the alternatives,
# MAX_SOURCES: a replay's (skewbench.grouping.params)
#: the most parallelisms one call compares (one screen)
MAX_PARALLELISMS = 8
#: Flink's largest max parallelism (Transformation.UPPER_BOUND_MAX_PARALLELISM)
MAX_FLINK_MAX_PARALLELISM = 1 << 15

HELP = (f"Limits: a file of at most {MAX_FILE_BYTES >> 30} GiB (after gzip) and {MAX_ROWS:,} lines, rows or "
        f"key,count pairs; keys of at most {MAX_KEY_BYTES:,} bytes of UTF-8; a count of at most 10^12, 2^53 "
        f"in all; parallelisms from 1 to {MAX_WORKERS:,}, at most {MAX_PARALLELISMS} of them; a Flink max "
        f"parallelism of at most {MAX_FLINK_MAX_PARALLELISM:,}; at most {MAX_SOURCES:,} sources. An empty "
        "file, a file without a key column, binary data, or a limit exceeded: one line on stderr, exit status 2.")
