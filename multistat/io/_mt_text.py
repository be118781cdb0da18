"""Plain-text machine-translation test sets as WMT ships them, read and checked before any
metric is computed.

A test set is one file per system (one segment per line), one file per reference, and
optionally a file giving each line's domain: WMT's ``documents/<pair>.docs`` (``domain
<TAB> document id`` per line) or ``metadata/<pair>.jsonl`` (one JSON object with a
``"domain"`` key per line), or any file with the domain as the first tab-separated field.
Since WMT24 every file starts with a *canary* line (``CANARY GUID ...`` in the text files,
domain ``canary`` in the documents and metadata files) that is not a segment.

:func:`read_test_set` reads every file of a test set, checks that all exist, decode as
UTF-8 and have the same number of lines, finds the canary lines (the reference's
``CANARY GUID`` lines and the lines of domain ``canary``) and drops those lines from every
file. Errors name the file and the line: a file cut in the middle of a character or of
its compressed stream is reported at the line where it breaks, a short file by its count
of lines against the reference's.
"""

from __future__ import annotations

import json
import lzma
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from multistat.errors import InputFileError, ParameterError
from multistat.io._sources import COMPRESSIONS, show, split_suffix

__all__ = ["TextTestSet", "is_canary", "read_domains", "read_lines", "read_test_set"]

#: WMT's canary text (the first line of every WMT24 text file)
_CANARY_TEXT = re.compile(r"^\s*CANARY GUID\b")
#: the domain WMT gives the canary line in documents/ and metadata/
CANARY_DOMAIN = "canary"
CANARY_CHOICES = ("auto", "keep")


def _path(path) -> str:
    """A file name in a message: whole (a shortened path would hide the file's name)."""
    return repr(str(path))


def is_canary(text: str) -> bool:
    """Whether a line of a WMT text file is the canary line (``CANARY GUID ...``).

    Parameters
    ----------
    text : str
        One line of a source, reference or system file.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_canary("CANARY GUID 0f4e-example"), is_canary("Canary Wharf is busy.")
    (True, False)
    """
    return bool(_CANARY_TEXT.match(text))


def read_lines(path, what: str = "file") -> list[str]:
    """Lines of a UTF-8 text file (``.gz``, ``.bz2``, ``.xz`` read transparently), each
    without its trailing whitespace (as the sacrebleu command line reads them).

    Parameters
    ----------
    path : str or Path
    what : str
        What the file is, for error messages (``"system file"``, ``"reference file"``).

    Returns
    -------
    list of str

    Raises
    ------
    InputFileError
        The file does not exist, a line is not UTF-8 (``"... line 715: not UTF-8 ..."``), or
        the compressed stream ends early (the line after the last complete one).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "sys.txt"
    >>> _ = p.write_bytes("eins\\nzwei \\n".encode())
    >>> read_lines(p)
    ['eins', 'zwei']
    >>> _ = p.write_bytes("eins\\nzw\\xc3".encode("latin-1"))
    >>> from multistat.errors import InputFileError
    >>> try:
    ...     read_lines(p, "system file")
    ... except InputFileError as exc:
    ...     print(str(exc).split("sys.txt' ")[1][:20])
    line 2: not UTF-8 (u
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{what} {_path(path)}: no such file")
    opener = COMPRESSIONS.get(split_suffix(path)[1] or "", open)
    out: list[str] = []
    try:
        with opener(path, "rb") as fh:
            for raw in fh:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputFileError(
                        f"{what} {_path(path)} line {len(out) + 1}: not UTF-8 "
                        f"({exc.reason} at byte {exc.start} of the line); is the file "
                        f"truncated or in another encoding?") from None
                out.append(text.rstrip())
    except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        raise InputFileError(f"{what} {_path(path)} line {len(out) + 1}: cannot read "
                             f"past line {len(out)} ({exc}); is the file truncated?"
                             ) from None
    return out


def read_domains(path) -> list[str]:
    """Each line's domain from a WMT documents or metadata file.

    Parameters
    ----------
    path : str or Path
        ``*.jsonl``: one JSON object per line with a ``"domain"`` key (WMT's
        ``metadata/``); any other file: the domain is the first tab-separated field of
        each line (WMT's ``documents/*.docs``: ``domain <TAB> document id``; a file with
        one domain per line works too).

    Returns
    -------
    list of str
        One domain per line, in file order (the canary line's domain is ``"canary"``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "en-de.docs"
    >>> _ = p.write_text("canary\\tcanary\\nnews\\tdoc1\\nsocial\\tdoc2\\n")
    >>> read_domains(p)
    ['canary', 'news', 'social']
    """
    path = Path(path)
    lines = read_lines(path, "domain file")
    jsonl = split_suffix(path)[0] in (".jsonl", ".ndjson")
    out = []
    for i, line in enumerate(lines, 1):
        if jsonl:
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise InputFileError(f"domain file {_path(path)} line {i}: not JSON "
                                     f"({exc})") from None
            if not isinstance(record, dict) or "domain" not in record:
                raise InputFileError(f"domain file {_path(path)} line {i}: no "
                                     f"'domain' key in {show(line)}")
            domain = str(record["domain"]).strip()
        else:
            domain = line.split("\t", 1)[0].strip()
        if not domain:
            raise InputFileError(f"domain file {_path(path)} line {i}: empty domain")
        out.append(domain)
    return out


@dataclass(frozen=True)
class TextTestSet:
    """One checked plain-text test set (:func:`read_test_set`).

    Attributes
    ----------
    name : dataset name
    hypotheses : ``{system: lines}``, canary lines removed
    references : one list of lines per reference file, canary lines removed
    domains : each kept line's domain, or None without a domain file
    skipped : 1-based line numbers dropped from every file as canary lines
    files : every file read, in order (systems, references, domains)
    """

    name: str
    hypotheses: dict[str, list[str]]
    references: list[list[str]]
    domains: list[str] | None
    skipped: tuple[int, ...] = ()
    files: tuple[Path, ...] = field(default_factory=tuple)

    def domain_positions(self) -> dict[str, list[int]]:
        """``{domain: kept segment positions}`` in order of first appearance."""
        out: dict[str, list[int]] = {}
        for i, d in enumerate(self.domains or ()):
            out.setdefault(d, []).append(i)
        return out


def read_test_set(name: str, systems: Mapping[str, Path], references: Sequence[Path],
                  domains: Path | None = None, *, canary: str = "auto",
                  where: str = "") -> TextTestSet:
    """Read and check every file of a plain-text test set; drop the canary lines.

    Parameters
    ----------
    name : str
        Dataset name (for messages and the result).
    systems : mapping
        ``{system: path}`` of system files, one segment per line.
    references : sequence of paths
        Reference files (several: several references of every segment).
    domains : path, optional
        Domain file (:func:`read_domains`), one line per segment.
    canary : {"auto", "keep"}
        ``"auto"`` drops the lines whose first reference reads ``CANARY GUID ...`` or whose
        domain is ``canary``, from every file; ``"keep"`` keeps every line.
    where : str
        Prefix of error messages (e.g. ``"--test-set wmt24:"``).

    Returns
    -------
    TextTestSet

    Raises
    ------
    InputFileError
        Missing files (all of them named), unreadable lines, files whose line counts
        differ from the first reference's, an empty reference.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "ref.txt").write_text("CANARY GUID x\\nDer Hund.\\nDie Katze.\\n")
    >>> _ = (d / "A.txt").write_text("CANARY GUID x\\nDer Hund.\\nEine Katze.\\n")
    >>> ts = read_test_set("t", {"A": d / "A.txt"}, [d / "ref.txt"])
    >>> ts.hypotheses["A"], ts.skipped
    (['Der Hund.', 'Eine Katze.'], (1,))
    """
    if canary not in CANARY_CHOICES:
        raise ParameterError(f"`canary` must be one of {', '.join(CANARY_CHOICES)}; got "
                             f"{canary!r}")
    prefix = f"{where} " if where else ""
    files = [*systems.values(), *references, *([domains] if domains is not None else [])]
    missing = [str(p) for p in files if not Path(p).is_file()]
    if missing:
        raise InputFileError(f"{prefix}{len(missing)} input file(s) of test set {name!r} "
                             f"do not exist: {', '.join(map(_path, missing[:5]))}"
                             + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    if not references:
        raise InputFileError(f"{prefix}test set {name!r} has no reference file")
    refs = [read_lines(p, f"{prefix}reference file") for p in references]
    n = len(refs[0])
    if n == 0:
        raise InputFileError(f"{prefix}reference file {_path(references[0])} is empty")

    def same_length(lines: list[str], path, what: str) -> None:
        if len(lines) != n:
            hint = " (truncated?)" if len(lines) < n else ""
            raise InputFileError(
                f"{prefix}{what} {_path(path)} has {len(lines)} lines{hint}, the "
                f"reference file {_path(references[0])} has {n}: every file of test "
                f"set {name!r} needs one line per segment")

    for p, r in zip(references[1:], refs[1:]):
        same_length(r, p, "reference file")
    doms = None
    if domains is not None:
        doms = read_domains(domains)
        same_length(doms, domains, "domain file")
    hyps = {}
    for system, path in systems.items():
        lines = read_lines(path, f"{prefix}system file")
        same_length(lines, path, "system file")
        hyps[str(system)] = lines
    drop: set[int] = set()
    if canary == "auto":
        drop = {i for i, t in enumerate(refs[0]) if is_canary(t)}
        if doms is not None:
            drop |= {i for i, d in enumerate(doms) if d.lower() == CANARY_DOMAIN}
    keep = [i for i in range(n) if i not in drop]
    if not keep:
        raise InputFileError(f"{prefix}test set {name!r}: every line is a canary line")

    def kept(lines):
        return [lines[i] for i in keep] if drop else lines

    return TextTestSet(
        name=name, hypotheses={s: kept(v) for s, v in hyps.items()},
        references=[kept(r) for r in refs], domains=kept(doms) if doms else None,
        skipped=tuple(sorted(i + 1 for i in drop)), files=tuple(Path(p) for p in files))
