"""python-crfsuite's sdist, unpacked to build CRFsuite's own program: a crafted archive
writes nothing outside the folder it is unpacked into, with tarfile's ``data`` filter
(Pythons that have it) and with the package's own checks (those that do not)."""

from __future__ import annotations

import copy
import io
import tarfile
from pathlib import Path

import pytest

from crfsdca.errors import CrfsdcaError
from crfsdca.reproduction.crfsuite_baseline import _extract_within, _unpacked_sdist

TAG_C = "python-crfsuite-0.9.12/crfsuite/frontend/tag.c"


def _member(name: str, kind=tarfile.REGTYPE, data: bytes = b"", linkname: str = ""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size, info.mode = kind, linkname, len(data), 0o644
    return info, io.BytesIO(data) if kind == tarfile.REGTYPE else None


def _archive(path: Path, *members) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(*_member(TAG_C, data=b"int main(void) { return 0; }\n"))
        for member in members:
            tar.addfile(*member)
    return path


CRAFTED = {
    "dot-dot": [_member("../escaped.txt", data=b"out")],
    "dot-dot inside a name": [_member("python-crfsuite-0.9.12/../../escaped.txt",
                                      data=b"out")],
    "absolute": [_member("{outside}/escaped.txt", data=b"out")],
    "symlink out, then a file through it": [
        _member("link", tarfile.SYMTYPE, linkname="{outside}"),
        _member("link/escaped.txt", data=b"out")],
    "relative symlink out": [_member("link", tarfile.SYMTYPE, linkname="../outside"),
                             _member("link/escaped.txt", data=b"out")],
    "hard link out": [_member("hard", tarfile.LNKTYPE, linkname="../outside/victim.txt")],
    "two links that point out together": [
        _member("l2", tarfile.SYMTYPE, linkname="d/l1/../outside"),
        _member("d/l1", tarfile.SYMTYPE, linkname=".."),
        _member("l2/escaped.txt", data=b"out")],
}


def _crafted(tmp_path: Path, case: str) -> tuple[Path, Path, Path]:
    """(the archive, the folder to unpack it into, a folder beside it that must stay as
    it is: ``outside``, with one file)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("untouched")
    members = []
    for info, data in CRAFTED[case]:
        info = copy.copy(info)
        info.name = info.name.format(outside=outside)
        info.linkname = info.linkname.format(outside=outside)
        members.append((info, data and io.BytesIO(data.getvalue())))
    into = tmp_path / "into"
    return _archive(tmp_path / "crafted.tar.gz", *members), into, outside


def _nothing_escaped(tmp_path: Path, outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "untouched"
    assert (outside / "victim.txt").stat().st_nlink == 1  # no hard link to it inside
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path.parent / "escaped.txt").exists()


@pytest.mark.skipif(not hasattr(tarfile, "data_filter"), reason="this Python's tarfile "
                    "has no data filter (the package's own checks: the test below)")
@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_sdist_writes_nothing_outside_with_the_data_filter(tmp_path, case):
    sdist, into, outside = _crafted(tmp_path, case)
    try:
        _unpacked_sdist(sdist, into)
    except CrfsdcaError as e:  # refused: says which archive
        assert str(sdist) in str(e) and "refuses" in str(e), e
    _nothing_escaped(tmp_path, outside)


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_sdist_is_refused_without_the_data_filter(tmp_path, case):
    """Where tarfile has no filter (3.10 before 3.10.12, 3.11 before 3.11.4): each such
    member is refused, with its name, and nothing lands outside."""
    sdist, into, outside = _crafted(tmp_path, case)
    with tarfile.open(sdist) as tar, pytest.raises(CrfsdcaError, match="refuses"):
        _extract_within(tar, into)
    _nothing_escaped(tmp_path, outside)


def test_without_the_data_filter_the_sdist_goes_through_unpack(tmp_path, monkeypatch):
    """_unpacked_sdist takes the package's own checks where tarfile lacks the filter, and
    names the archive in what it refuses."""
    sdist, into, outside = _crafted(tmp_path, "dot-dot")
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    with pytest.raises(CrfsdcaError, match="refuses") as caught:
        _unpacked_sdist(sdist, into)
    assert str(sdist) in str(caught.value)
    _nothing_escaped(tmp_path, outside)


@pytest.mark.parametrize("own_checks", [False, True])
def test_a_plain_sdist_unpacks_with_its_links(tmp_path, own_checks):
    """What python-crfsuite's sdist holds unpacks either way: files, folders, and links
    that stay inside; the folder of the sources is found."""
    sdist = _archive(tmp_path / "plain.tar.gz",
                     _member("python-crfsuite-0.9.12/crfsuite/include/crfsuite.h",
                             data=b"/* h */\n"),
                     _member("python-crfsuite-0.9.12/include", tarfile.SYMTYPE,
                             linkname="crfsuite/include"),
                     _member("python-crfsuite-0.9.12/tag-copy.c", tarfile.LNKTYPE,
                             linkname=TAG_C))
    into = tmp_path / "into"
    if own_checks:
        with tarfile.open(sdist) as tar:
            _extract_within(tar, into)
        found = _unpacked_sdist(into, tmp_path / "unused")
    else:
        if not hasattr(tarfile, "data_filter"):
            pytest.skip("this Python's tarfile has no data filter")
        found = _unpacked_sdist(sdist, into)
    assert found == into / "python-crfsuite-0.9.12"
    assert (found / "include" / "crfsuite.h").read_text() == "/* h */\n"
    assert (found / "tag-copy.c").read_text().startswith("int main")
