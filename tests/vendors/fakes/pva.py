"""A fake ``pva`` (libpva's Python module) that returns a small report object graph with the
fields dabench's exporter reads: 2 IPUs x 4 tiles of 100 bytes, tile memory and cycles chosen so
the expected numbers are easy to check by hand."""

from types import SimpleNamespace as NS

from fake_recorder import record


def _tile(bytes_used):
    return NS(memory=NS(total=NS(includingGaps=bytes_used, excludingGaps=bytes_used)))


def openReport(path):
    record("pva.openReport", path)
    target = NS(
        numIPUs=2,
        tilesPerIpu=4,
        bytesPerTile=100,
        bytesPerIPU=400,
        clockFrequency=1.0e9,
        numReplicas=1,
        ipusPerReplica=2,
    )
    tiles = [_tile(b) for b in (50, 50, 50, 50, 100, 0, 100, 0)]
    compute = NS(program=NS(type=NS(name="OnTileExecute")), ipus=[NS(cycles=1000), NS(cycles=3000)])
    sync = NS(program=NS(type=NS(name="Sync")), ipus=[NS(cycles=5000), NS(cycles=10)])
    return NS(
        compilation=NS(target=target, tiles=tiles),
        execution=NS(steps=[compute, sync, compute]),
        poplarVersion=NS(string="3.3.0-fake"),
    )
