"""``clirbench cache verify|clean``: check every cache shard's checksum, set bad ones aside, remove stray files."""
from __future__ import annotations

import argparse

from ..cache.layout import default_cache_dir
from ..cache.shards import clean_cache, verify_cache

__all__ = ["add_cache_parser", "cmd_cache"]


def add_cache_parser(sub) -> argparse.ArgumentParser:
    """Add ``cache`` (verify, clean) to the ``clirbench`` subparsers; returns its parser."""
    p = sub.add_parser("cache", help="verify or clean the on-disk caches (embeddings, translations)")
    verbs = p.add_subparsers(dest="cache_command", metavar="{verify,clean}", required=True, parser_class=type(p))
    for verb, text in (("verify", "list bad shards and stray temp files; exit 1 if any"),
                       ("clean", "move bad shards to quarantine/ and remove stray temp files")):
        q = verbs.add_parser(verb, help=text)
        q.add_argument("--cache-dir", default=None,
                       help="cache folder (default: $CLIRBENCH_CACHE_DIR or ~/.cache/clirbench)")
        if verb == "clean":
            q.add_argument("--purge", action="store_true", help="then delete everything in quarantine/")
    p.set_defaults(handler=cmd_cache)
    return p


def _label(item) -> str:
    return str(item.folder / item.name) if hasattr(item, "folder") else str(item)


def cmd_cache(args: argparse.Namespace) -> int:
    root = args.cache_dir or default_cache_dir()
    if args.cache_command == "verify":
        report = verify_cache(root)
        for item, reason in report.bad:
            print(f"bad    {_label(item)}: {reason}")
        for path in report.stray:
            print(f"stray  {path}")
        print(f"{root}: {report.shards} shards ({report.unverified} written before checksums, checked by loading), "
              f"{len(report.bad)} bad, {len(report.stray)} stray, {report.quarantined} files in quarantine")
        return 0 if report.clean else 1
    report, purged = clean_cache(root, purge=args.purge)
    for item, reason in report.bad:
        print(f"quarantined  {_label(item)}: {reason}")
    for path in report.stray:
        print(f"removed      {path}")
    for folder in purged:
        print(f"purged       {folder}")
    print(f"{root}: {len(report.bad)} bad set aside, {len(report.stray)} stray removed"
          + (f", {len(purged)} quarantine folder(s) emptied" if args.purge else ""))
    return 0
