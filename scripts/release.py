#!/usr/bin/env python3
"""Builds hostguard's release: static binaries for every platform, their
archives, SHA256SUMS and the module list, the Python wheels and the npm
packages. Standard library only; `make dist` runs it.

    scripts/release.py dist [--out release] [--platforms linux/amd64,linux/arm64] [--no-npm]
    scripts/release.py check-version    # every copy of the version agrees with VERSION
    scripts/release.py check-binary FILE GOOS/GOARCH

VERSION at the root of the repository is the one source of the version;
the binary embeds it, the wheels and the npm packages are stamped from it,
and check-version fails when a copy in the clients says otherwise.

The output is reproducible: two runs on one commit give the same bytes
(go build -trimpath with a fixed build id; archive entries sorted, owned
by 0:0 and dated at the commit's time, or SOURCE_DATE_EPOCH).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
PYPKG = REPO / "clients" / "python"
TSPKG = REPO / "clients" / "typescript"
URL = "https://github.com/hostguard/hostguard"


@dataclass(frozen=True)
class Platform:
    goos: str
    goarch: str
    goarm: str  # "" unless goarch is arm
    name: str  # in file names: linux-armv7
    wheel_tag: str  # the wheel's platform tag (a compressed tag set)
    npm_os: str
    npm_cpu: str

    @property
    def exe(self) -> str:
        return "hostguard.exe" if self.goos == "windows" else "hostguard"

    @property
    def npm_name(self) -> str:
        return "@hostguard/%s-%s" % (self.npm_os, self.npm_cpu)


def _linux_tag(arch: str) -> str:
    # The binary is static: any glibc or musl system of the architecture
    # runs it, so the wheel carries both families' tags, as ruff's do.
    return "manylinux_2_17_{0}.manylinux2014_{0}.musllinux_1_2_{0}".format(arch)


# Go 1.26 supports macOS 12 and later.
PLATFORMS = [
    Platform("linux", "amd64", "", "linux-amd64", _linux_tag("x86_64"), "linux", "x64"),
    Platform("linux", "arm64", "", "linux-arm64", _linux_tag("aarch64"), "linux", "arm64"),
    Platform("linux", "arm", "7", "linux-armv7", _linux_tag("armv7l"), "linux", "arm"),
    Platform("darwin", "amd64", "", "darwin-amd64", "macosx_12_0_x86_64", "darwin", "x64"),
    Platform("darwin", "arm64", "", "darwin-arm64", "macosx_12_0_arm64", "darwin", "arm64"),
    Platform("windows", "amd64", "", "windows-amd64", "win_amd64", "win32", "x64"),
]


def version() -> str:
    v = (REPO / "VERSION").read_text().strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:[-.+][0-9A-Za-z.]+)?", v):
        sys.exit("release: VERSION %r is not a version like 0.1.0" % v)
    return v


def source_date() -> int:
    """The time written into archives: SOURCE_DATE_EPOCH, else the commit's."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=REPO, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        return int(out.strip())
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 315532800  # 1980-01-01, the earliest a zip can say


# --- version copies ---------------------------------------------------------


def version_copies() -> Dict[str, str]:
    """Every place outside VERSION that spells the version, and what it says."""
    out: Dict[str, str] = {}
    init = (PYPKG / "hostguard" / "__init__.py").read_text()
    m = re.search(r'^__version__ = "([^"]+)"', init, re.M)
    out["clients/python/hostguard/__init__.py __version__"] = m.group(1) if m else "(missing)"
    pkg = json.loads((TSPKG / "package.json").read_text())
    out["clients/typescript/package.json version"] = pkg.get("version", "(missing)")
    lock = json.loads((TSPKG / "package-lock.json").read_text())
    out["clients/typescript/package-lock.json version"] = lock.get("version", "(missing)")
    return out


def check_version() -> int:
    v = version()
    bad = [(k, got) for k, got in version_copies().items() if got != v]
    for k, got in bad:
        print("release: %s is %s; VERSION says %s" % (k, got, v), file=sys.stderr)
    if bad:
        print("release: make them agree (scripts/release.py set-version %s)" % v, file=sys.stderr)
        return 1
    print("release: every copy of the version is %s" % v)
    return 0


def set_version(v: str) -> None:
    (REPO / "VERSION").write_text(v + "\n")
    p = PYPKG / "hostguard" / "__init__.py"
    p.write_text(re.sub(r'^__version__ = "[^"]*"', '__version__ = "%s"' % v, p.read_text(), flags=re.M))
    for p in (TSPKG / "package.json", TSPKG / "package-lock.json"):
        data = json.loads(p.read_text())
        data["version"] = v
        if p.name == "package-lock.json":
            data.get("packages", {}).get("", {})["version"] = v
        p.write_text(json.dumps(data, indent=2) + "\n")


# --- binaries ---------------------------------------------------------------


def commit() -> str:
    """The commit being built, with -dirty when the tree has changes."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, check=True,
                               stdout=subprocess.PIPE, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("-dirty" if dirty else "")


def go_build(p: Platform, out: Path, rev: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    exe = out / p.exe
    env = dict(os.environ, CGO_ENABLED="0", GOOS=p.goos, GOARCH=p.goarch, GOFLAGS="")
    env.pop("GOARM", None)
    if p.goarm:
        env["GOARM"] = p.goarm
    # -trimpath and -buildid= leave nothing of this machine in the binary,
    # and -buildvcs=false nothing of the checkout but the commit given
    # here (the go command's own stamp depends on its settings). The
    # version is the embedded VERSION file.
    ldflags = "-s -w -buildid= -X github.com/hostguard/hostguard/cmd/hostguard/cli.Commit=" + rev
    cmd = ["go", "build", "-trimpath", "-buildvcs=false", "-ldflags=" + ldflags, "-o", str(exe), "./cmd/hostguard"]
    subprocess.run(cmd, cwd=REPO, env=env, check=True)
    check_binary(exe, p.goos, p.goarch)
    return exe


ELF_MACHINE = {"amd64": 62, "arm64": 183, "arm": 40}
MACHO_CPU = {"amd64": 0x01000007, "arm64": 0x0100000C}
PE_MACHINE = {"amd64": 0x8664, "arm64": 0xAA64}


def check_binary(path: Path, goos: str, goarch: str) -> None:
    """Fails unless path is a static executable for goos/goarch, read from
    its ELF, Mach-O or PE header."""
    b = path.read_bytes()

    def fail(why: str) -> None:
        raise SystemExit("release: %s is not a %s/%s executable: %s" % (path, goos, goarch, why))

    if goos == "linux":
        if b[:4] != b"\x7fELF":
            fail("no ELF magic")
        bits64 = b[4] == 2
        if b[5] != 1:
            fail("not little-endian")
        machine = struct.unpack_from("<H", b, 18)[0]
        if machine != ELF_MACHINE[goarch]:
            fail("ELF machine %d, want %d" % (machine, ELF_MACHINE[goarch]))
        if bits64 != (goarch != "arm"):
            fail("ELF class %d" % b[4])
        # Program headers: a PT_INTERP (3) would mean a dynamic loader.
        if bits64:
            phoff, = struct.unpack_from("<Q", b, 32)
            phentsize, phnum = struct.unpack_from("<HH", b, 54)
        else:
            phoff, = struct.unpack_from("<I", b, 28)
            phentsize, phnum = struct.unpack_from("<HH", b, 42)
        for i in range(phnum):
            if struct.unpack_from("<I", b, phoff + i * phentsize)[0] == 3:
                fail("it asks for a dynamic loader (PT_INTERP): not static")
    elif goos == "darwin":
        if b[:4] != b"\xcf\xfa\xed\xfe":
            fail("no 64-bit little-endian Mach-O magic")
        cpu = struct.unpack_from("<I", b, 4)[0]
        if cpu != MACHO_CPU[goarch]:
            fail("Mach-O cputype %#x, want %#x" % (cpu, MACHO_CPU[goarch]))
    elif goos == "windows":
        if b[:2] != b"MZ":
            fail("no MZ header")
        pe = struct.unpack_from("<I", b, 0x3C)[0]
        if b[pe:pe + 4] != b"PE\0\0":
            fail("no PE signature")
        machine = struct.unpack_from("<H", b, pe + 4)[0]
        if machine != PE_MACHINE[goarch]:
            fail("PE machine %#x, want %#x" % (machine, PE_MACHINE[goarch]))
    else:
        fail("unknown system")


# --- archives ---------------------------------------------------------------


def _archive_files(p: Platform, exe: Path) -> List[Tuple[str, bytes, int]]:
    files = [
        (p.exe, exe.read_bytes(), 0o755),
        ("LICENSE", (REPO / "LICENSE").read_bytes(), 0o644),
        ("README.md", (REPO / "README.md").read_bytes(), 0o644),
        ("CHANGELOG.md", (REPO / "CHANGELOG.md").read_bytes(), 0o644),
    ]
    if p.goos == "linux":
        files.append(("hostguard.service", (REPO / "dist" / "hostguard.service").read_bytes(), 0o644))
    return sorted(files)


def write_tgz(path: Path, top: str, files: Iterable[Tuple[str, bytes, int]], mtime: int) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        d = tarfile.TarInfo(top)
        d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, mtime
        tar.addfile(d)
        for name, data, mode in files:
            ti = tarfile.TarInfo("%s/%s" % (top, name))
            ti.size, ti.mode, ti.mtime = len(data), mode, mtime
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            tar.addfile(ti, io.BytesIO(data))
    with open(path, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=mtime, compresslevel=9) as gz:
            gz.write(raw.getvalue())


def _zipinfo(name: str, mode: int, mtime: int) -> zipfile.ZipInfo:
    t = time.gmtime(max(mtime, 315532800))
    zi = zipfile.ZipInfo(name, date_time=(t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec))
    zi.create_system = 3  # unix, so that the mode below is read
    zi.external_attr = (stat.S_IFREG | mode) << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    return zi


def write_zip(path: Path, files: Iterable[Tuple[str, bytes, int]], mtime: int) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in files:
            z.writestr(_zipinfo(name, mode, mtime), data, compresslevel=9)


# --- wheels -----------------------------------------------------------------


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _metadata(v: str) -> bytes:
    summary = "Client for the hostguard daemon, and the daemon itself: connectivity guard, retry queue, budget, guarded fetch"
    head = [
        "Metadata-Version: 2.1",
        "Name: hostguard",
        "Version: " + v,
        "Summary: " + summary,
        "License: Apache-2.0",
        "Project-URL: Homepage, " + URL,
        "Project-URL: Documentation, %s/tree/main/clients/python" % URL,
        "Project-URL: Changelog, %s/blob/main/CHANGELOG.md" % URL,
        "Project-URL: Issues, %s/issues" % URL,
        "Classifier: License :: OSI Approved :: Apache Software License",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Typing :: Typed",
        "Requires-Python: >=3.9",
        "Description-Content-Type: text/markdown",
    ]
    return ("\n".join(head) + "\n\n").encode() + (PYPKG / "README.md").read_bytes()


def build_wheel(out: Path, v: str, mtime: int, p: Optional[Platform] = None, exe: Optional[Path] = None) -> Path:
    """A wheel of the client package; with a platform, its binary too, put
    where pip puts scripts (so `hostguard` lands on PATH, as ruff's does)."""
    tag = "py3-none-" + (p.wheel_tag if p else "any")
    dist_info = "hostguard-%s.dist-info" % v
    files: List[Tuple[str, bytes, int]] = []
    pkg = PYPKG / "hostguard"
    for f in sorted(pkg.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".typed"):
            files.append(("hostguard/" + f.relative_to(pkg).as_posix(), f.read_bytes(), 0o644))
    if p is not None:
        assert exe is not None
        files.append(("hostguard-%s.data/scripts/%s" % (v, p.exe), exe.read_bytes(), 0o755))
    wheel = ["Wheel-Version: 1.0", "Generator: hostguard scripts/release.py",
             "Root-Is-Purelib: %s" % ("false" if p else "true")]
    wheel += ["Tag: py3-none-" + t for t in tag.split("-", 2)[2].split(".")]
    files += [
        (dist_info + "/METADATA", _metadata(v), 0o644),
        (dist_info + "/WHEEL", ("\n".join(wheel) + "\n").encode(), 0o644),
        (dist_info + "/LICENSE", (REPO / "LICENSE").read_bytes(), 0o644),
    ]
    record = "".join("%s,%s,%d\n" % (n, _record_hash(d), len(d)) for n, d, _ in files)
    record += dist_info + "/RECORD,,\n"
    files.append((dist_info + "/RECORD", record.encode(), 0o644))
    path = out / ("hostguard-%s-%s.whl" % (v, tag))
    write_zip(path, files, mtime)
    return path


# --- npm --------------------------------------------------------------------


def npm_pack(src: Path, out: Path) -> Path:
    r = subprocess.run(["npm", "pack", "--json", "--pack-destination", str(out)], cwd=src,
                       check=True, stdout=subprocess.PIPE)
    return out / json.loads(r.stdout)[0]["filename"]


def build_npm_platform(p: Platform, exe: Path, v: str, work: Path, out: Path) -> Path:
    d = work / ("npm-" + p.name)
    shutil.rmtree(d, ignore_errors=True)
    (d / "bin").mkdir(parents=True)
    shutil.copyfile(exe, d / "bin" / p.exe)
    os.chmod(d / "bin" / p.exe, 0o755)
    shutil.copyfile(REPO / "LICENSE", d / "LICENSE")
    arm = " (ARMv7 and newer)" if p.goarch == "arm" else ""
    (d / "README.md").write_text(
        "# %s\n\nThe hostguard binary for %s/%s%s. Install `hostguard`, which depends on this\n"
        "package on the systems it fits; see %s.\n" % (p.npm_name, p.goos, p.goarch, arm, URL))
    pkg = {
        "name": p.npm_name,
        "version": v,
        "description": "The hostguard daemon's binary for %s/%s%s" % (p.goos, p.goarch, arm),
        "license": "Apache-2.0",
        "repository": {"type": "git", "url": "git+%s.git" % URL},
        "os": [p.npm_os],
        "cpu": [p.npm_cpu],
        "files": ["bin/" + p.exe],
        "preferUnplugged": True,
    }
    (d / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")
    return npm_pack(d, out)


def build_npm_main(v: str, work: Path, out: Path) -> Path:
    """The hostguard package: the client, its types and the bin shim, with
    optionalDependencies on every platform's package. Those dependencies
    are written only here: in the tree, before the platform packages are
    published, npm ci could not lock them."""
    if not (TSPKG / "node_modules" / "typescript").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=TSPKG, check=True)
    d = work / "npm-hostguard"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for name in ("src", "bin"):
        shutil.copytree(TSPKG / name, d / name)
    for name in ("tsconfig.json", "README.md"):
        shutil.copyfile(TSPKG / name, d / name)
    shutil.copyfile(REPO / "LICENSE", d / "LICENSE")
    os.symlink(TSPKG / "node_modules", d / "node_modules")
    pkg = json.loads((TSPKG / "package.json").read_text())
    pkg["version"] = v
    pkg["optionalDependencies"] = {p.npm_name: v for p in PLATFORMS}
    (d / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")
    # prepack builds build/ there from the sources, as from a clean checkout.
    return npm_pack(d, out)


# --- dist -------------------------------------------------------------------


def dist(out: Path, platforms: List[Platform], npm: bool) -> None:
    v = version()
    if check_version() != 0:
        raise SystemExit(1)
    mtime = source_date()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    work = out / ".work"
    made: List[Path] = []
    modules: List[str] = []
    rev = commit()
    for p in platforms:
        print("release: building %s/%s%s" % (p.goos, p.goarch, "v" + p.goarm if p.goarm else ""), flush=True)
        exe = go_build(p, work / p.name, rev)
        top = "hostguard-%s-%s" % (v, p.name)
        files = _archive_files(p, exe)
        if p.goos == "windows":
            arc = out / (top + ".zip")
            write_zip(arc, [("%s/%s" % (top, n), d, m) for n, d, m in files], mtime)
        else:
            arc = out / (top + ".tar.gz")
            write_tgz(arc, top, files, mtime)
        made.append(arc)
        made.append(build_wheel(out, v, mtime, p, exe))
        mods = subprocess.run(["go", "version", "-m", str(exe)], check=True, stdout=subprocess.PIPE,
                              text=True).stdout
        modules.append(mods.replace(str(exe), top + "/" + p.exe))
        if npm:
            made.append(build_npm_platform(p, exe, v, work, out))
    made.append(build_wheel(out, v, mtime))
    if npm:
        made.append(build_npm_main(v, work, out))
    (out / "modules.txt").write_text("".join(modules))
    made.append(out / "modules.txt")
    sums = "".join("%s  %s\n" % (hashlib.sha256(f.read_bytes()).hexdigest(), f.name) for f in sorted(made))
    (out / "SHA256SUMS").write_text(sums)
    shutil.rmtree(work)
    print("release: %d files in %s" % (len(made), out))


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="scripts/release.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dist", help="build the release into --out")
    d.add_argument("--out", default=str(REPO / "release"))
    d.add_argument("--platforms", default="", help="comma-separated GOOS/GOARCH (linux/armv7 for ARMv7); default all")
    d.add_argument("--no-npm", action="store_true", help="leave out the npm packages")
    sub.add_parser("check-version", help="every copy of the version agrees with VERSION")
    sv = sub.add_parser("set-version", help="write a new version into VERSION and every copy")
    sv.add_argument("version")
    cb = sub.add_parser("check-binary", help="FILE is a static executable for GOOS/GOARCH")
    cb.add_argument("file")
    cb.add_argument("platform")
    a = ap.parse_args(argv)
    if a.cmd == "check-version":
        return check_version()
    if a.cmd == "set-version":
        set_version(a.version)
        return check_version()
    if a.cmd == "check-binary":
        goos, goarch = a.platform.split("/")
        check_binary(Path(a.file), goos, "arm" if goarch == "armv7" else goarch)
        return 0
    by_name = {"%s/%s" % (p.goos, p.name.split("-", 1)[1]): p for p in PLATFORMS}
    names = [s.strip() for s in a.platforms.replace(" ", ",").split(",") if s.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        ap.error("unknown platform %s; known: %s" % (", ".join(unknown), ", ".join(by_name)))
    dist(Path(a.out).resolve(), [by_name[n] for n in names] if names else PLATFORMS, not a.no_npm)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
