#!/usr/bin/env python3
"""Builds the console's base map, Sources/VroomXServer/Console/MapData/basemap.json.

Sources, all in the public domain:
  - US states: the Census Bureau's cartographic boundary file cb_2016_us_state_500k
    (shipped in PyPI `plotly-geo`, _plotly_geo/package_data/);
  - other countries: Natural Earth 1:110m admin-0 countries
    (shipped in PyPI `geopandas==0.14.4`, geopandas/datasets/naturalearth_lowres/);
  - cities: `places.py` beside this script (positions of city centres);
  - interstates: `places.py`, each route as the line through the cities and towns it
    serves, in order: a schematic for seeing where a truck is, not for navigating.

Offline, on a machine with PyPI:
    pip download --no-deps -d /tmp/basemap plotly-geo geopandas==0.14.4 && pip install pyshp
    scripts/basemap/build.py /tmp/basemap

Rings are simplified (Douglas-Peucker, 0.01 degree, about 1 km) and islands under
0.05 degree across are left out; positions are thousandths of a degree, each after
the first as the difference from the one before (small numbers, a small file).
"""
import json
import os
import sys
import zipfile

import shapefile  # PyPI pyshp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from places import CITIES, INTERSTATES, WAYPOINTS  # noqa: E402

TOLERANCE = 0.01
SMALLEST = 0.05
OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "Sources", "VroomXServer", "Console", "MapData", "basemap.json")


def simplify(points, tolerance):
    """Douglas-Peucker, iterative (rings have thousands of points)."""
    if len(points) < 3:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        first, last = stack.pop()
        (x1, y1), (x2, y2) = points[first], points[last]
        dx, dy = x2 - x1, y2 - y1
        length = (dx * dx + dy * dy) ** 0.5
        farthest, distance = None, tolerance
        for i in range(first + 1, last):
            x, y = points[i]
            d = abs(dy * (x - x1) - dx * (y - y1)) / length if length else ((x - x1) ** 2 + (y - y1) ** 2) ** 0.5
            if d > distance:
                farthest, distance = i, d
        if farthest is not None:
            keep[farthest] = True
            stack += [(first, farthest), (farthest, last)]
    return [p for p, k in zip(points, keep) if k]


def encode(points):
    """Thousandths of a degree, [lon, lat] then differences."""
    out, last = [], (0, 0)
    for lon, lat in points:
        q = (round(lon * 1000), round(lat * 1000))
        if out and q == last:
            continue
        out += [q[0] - last[0], q[1] - last[1]]
        last = q
    return out


def rings(shape):
    parts = list(shape.parts) + [len(shape.points)]
    for start, end in zip(parts, parts[1:]):
        ring = shape.points[start:end]
        lons, lats = [p[0] for p in ring], [p[1] for p in ring]
        if max(lons) - min(lons) < SMALLEST and max(lats) - min(lats) < SMALLEST:
            continue
        ring = simplify(ring, TOLERANCE)
        if len(ring) >= 4:
            yield encode(ring)


def reader(folder, wheel, member):
    """A shapefile from a downloaded wheel (or an unpacked folder)."""
    path = next((os.path.join(folder, f) for f in os.listdir(folder) if f.startswith(wheel) and f.endswith(".whl")), None)
    if path is None:
        sys.exit(f"no {wheel}*.whl in {folder}: pip download --no-deps -d {folder} plotly-geo geopandas==0.14.4")
    archive = zipfile.ZipFile(path)
    files = {ext: archive.open(f"{member}.{ext}") for ext in ("shp", "shx", "dbf")}
    return shapefile.Reader(shp=files["shp"], shx=files["shx"], dbf=files["dbf"], encoding="latin-1")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "/tmp/basemap"
    states = []
    for record, shape in zip(*(lambda r: (r.records(), r.shapes()))(reader(folder, "plotly_geo", "_plotly_geo/package_data/cb_2016_us_state_500k"))):
        states.append({"name": record["NAME"], "code": record["STUSPS"], "rings": list(rings(shape))})
    states.sort(key=lambda s: s["code"])
    countries = []
    world = reader(folder, "geopandas", "geopandas/datasets/naturalearth_lowres/naturalearth_lowres")
    for record, shape in zip(world.records(), world.shapes()):
        if record["iso_a3"] == "USA" or record["continent"] == "Antarctica":
            continue  # the states draw the United States, in more detail
        countries.append({"name": record["name"], "rings": list(rings(shape))})
    countries.sort(key=lambda c: c["name"])
    for name, route in INTERSTATES.items():
        missing = [p for p in route if p not in WAYPOINTS and p not in CITIES]
        if missing:
            sys.exit(f"{name}: no position for {missing}")
    position = lambda p: CITIES[p][1:3] if p in CITIES else WAYPOINTS[p]
    data = {
        "sources": "US states: U.S. Census Bureau, cartographic boundaries 2016 (1:500,000); other countries: "
                   "Natural Earth 1:110m; cities and interstates (a schematic through the places each serves): VroomX",
        "states": states,
        "countries": countries,
        "interstates": [{"name": name, "points": encode([(lon, lat) for lat, lon in map(position, route)])}
                        for name, route in sorted(INTERSTATES.items(), key=lambda r: int(r[0].split("-")[1]))],
        "cities": [{"name": name.split(",")[0], "region": region, "latitude": lat, "longitude": lon, "tier": tier}
                   for name, (tier, lat, lon, region) in sorted(CITIES.items(), key=lambda c: (c[1][0], c[0]))],
    }
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w") as out:
        json.dump(data, out, separators=(",", ":"))
    points = sum(len(r) // 2 for s in states + countries for r in s["rings"])
    print(f"{os.path.normpath(OUTPUT)}: {os.path.getsize(OUTPUT) // 1024} KB, {len(states)} states, "
          f"{len(countries)} countries, {points} points, {len(INTERSTATES)} interstates, {len(CITIES)} cities")


if __name__ == "__main__":
    main()
