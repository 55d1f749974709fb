"""Raw files: checksums, atomic writes, and the download path against a local HTTP server."""

from __future__ import annotations

import gzip
import hashlib
import io
import zipfile

import pytest
import yaml
from helpers.paths import RAW, ROOT

from crfsdca.cli import main
from crfsdca.data.raw import (
    ContentCheck,
    archive_problem,
    content_problem,
    download,
    read_checksums,
    sha256_file,
    verify_file,
)
from crfsdca.errors import ChecksumError, DataFormatError, DownloadError
from crfsdca.runtime.io import atomic_path, atomic_write


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _zip_bytes(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return buf.getvalue()


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir())


# ----------------------------------------------------------------------------- vendored data

def test_vendored_files_match_sha256sums_and_config():
    sums = read_checksums(RAW / "SHA256SUMS")
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert set(sums) == set(config["raw_files"]) == {
        "letter.data.gz", "conll2000.zip", "conll2002.zip", "treebank.zip"}
    for name, sha in sums.items():
        assert config["raw_files"][name]["sha256"] == sha
        assert sha256_file(RAW / name) == sha, name
        assert verify_file(RAW / name, sha) == "sha256"


def test_read_checksums_rejects_malformed_line(tmp_path):
    p = tmp_path / "SHA256SUMS"
    p.write_text("0" * 64 + "  a.zip\nnot a checksum line\n")
    with pytest.raises(DataFormatError, match=r"SHA256SUMS:2: expected"):
        read_checksums(p)


# ----------------------------------------------------------------------------- atomic writes

def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(target) as f:
        f.write("half-written")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == ["out.txt"]
    with atomic_write(target) as f:
        f.write("new")
    assert target.read_text() == "new"
    assert _leftovers(tmp_path) == ["out.txt"]


def test_atomic_path_creates_parent_and_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "a" / "b" / "out.bin"
    with pytest.raises(ValueError), atomic_path(target) as tmp:
        tmp.write_bytes(b"x")
        raise ValueError
    assert not target.exists() and _leftovers(target.parent) == []
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"ok")
    assert target.read_bytes() == b"ok"
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # not mkstemp's private mode


# ----------------------------------------------------------------------------- integrity checks

def test_archive_problem_detects_truncated_zip_and_gzip(tmp_path):
    data = _zip_bytes({"a/train.txt": "w NN B-NP\n" * 2000})
    good, bad = tmp_path / "good.zip", tmp_path / "bad.zip"
    good.write_bytes(data)
    bad.write_bytes(data[: len(data) // 2])
    assert archive_problem(good) is None
    assert "truncated" in archive_problem(bad)
    gz = gzip.compress(b"1\t2\n" * 5000)
    (tmp_path / "t.gz").write_bytes(gz[:-20])
    assert "truncated" in archive_problem(tmp_path / "t.gz")


def test_corrupted_deflate_stream_is_reported(tmp_path):
    data = bytearray((RAW / "conll2000.zip").read_bytes())
    data[1000] ^= 0xFF  # inside the first member's compressed data
    p = tmp_path / "conll2000.zip"
    p.write_bytes(bytes(data))
    assert "corrupt" in archive_problem(p)
    expected = read_checksums(RAW / "SHA256SUMS")["conll2000.zip"]
    with pytest.raises(ChecksumError, match=rf"conll2000\.zip: checksum mismatch: expected "
                                            rf"sha256 {expected}, actual sha256 [0-9a-f]{{64}}; "
                                            r"the file is not a complete zip archive"):
        verify_file(p, expected)


def test_content_check(tmp_path):
    p = tmp_path / "x.data.gz"
    p.write_bytes(gzip.compress(b"a\tb\tc\t\n" * 3))  # a trailing tab is not a column
    assert content_problem(p, ContentCheck(3, 3)) is None
    assert "rows" in content_problem(p, ContentCheck(4, 3))
    assert "columns" in content_problem(p, ContentCheck(3, 4))


# ----------------------------------------------------------------------------- download

def test_download_good_file(http_dir, tmp_path):
    served, url = http_dir
    data = _zip_bytes({"c/train.txt": "The DT B-NP\n"})
    (served / "c.zip").write_bytes(data)
    dest = tmp_path / "raw" / "c.zip"
    assert download(f"{url}/c.zip", dest, _sha(data)) == "sha256"
    assert dest.read_bytes() == data
    assert _leftovers(dest.parent) == ["c.zip"]


def test_download_corrupted_file_leaves_nothing(http_dir, tmp_path):
    served, url = http_dir
    data = _zip_bytes({"c/train.txt": "The DT B-NP\n" * 100})
    corrupted = bytearray(data)
    corrupted[len(data) // 3] ^= 0xFF
    (served / "c.zip").write_bytes(bytes(corrupted))
    dest_dir = tmp_path / "raw"
    dest_dir.mkdir()
    with pytest.raises(ChecksumError) as err:
        download(f"{url}/c.zip", dest_dir / "c.zip", _sha(data))
    msg = str(err.value)
    assert "c.zip" in msg and _sha(data) in msg and _sha(bytes(corrupted)) in msg
    assert _leftovers(dest_dir) == []


def test_download_truncated_archive_names_the_problem(http_dir, tmp_path):
    served, url = http_dir
    data = _zip_bytes({"c/train.txt": "The DT B-NP\n" * 1000})
    (served / "c.zip").write_bytes(data[:-100])
    with pytest.raises(ChecksumError, match=r"c\.zip: checksum mismatch.*truncated"):
        download(f"{url}/c.zip", tmp_path / "c.zip", _sha(data))
    assert _leftovers(tmp_path) == ["served"]


def test_download_accepts_content_check_instead_of_sha(http_dir, tmp_path):
    served, url = http_dir
    rows = "".join(f"{i}\ta\tx\n" for i in range(10))
    (served / "letter.data.gz").write_bytes(gzip.compress(rows.encode()))
    dest = tmp_path / "letter.data.gz"
    assert download(f"{url}/letter.data.gz", dest, "0" * 64, ContentCheck(10, 3)) == "content"
    assert dest.exists()
    dest.unlink()
    with pytest.raises(ChecksumError, match="content check failed: has 10 rows, expected 11"):
        download(f"{url}/letter.data.gz", dest, "0" * 64, ContentCheck(11, 3))
    assert not dest.exists()


def test_download_missing_url(http_dir, tmp_path):
    _, url = http_dir
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(f"{url}/nothing.zip", tmp_path / "nothing.zip", "0" * 64)
    assert _leftovers(tmp_path) == ["served"]


def test_cli_download_reports_mismatch_without_traceback(http_dir, tmp_path, capsys):
    served, url = http_dir
    (served / "f.zip").write_bytes(_zip_bytes({"x": "y"}))
    code = main(["download", "--url", f"{url}/f.zip", "--output", str(tmp_path / "f.zip"),
                 "--sha256", "a" * 64])
    err = capsys.readouterr().err
    assert code == 2
    assert "error: f.zip: checksum mismatch: expected sha256 " + "a" * 64 in err
    assert "Traceback" not in err
    assert not (tmp_path / "f.zip").exists()
    ok = main(["download", "--url", f"{url}/f.zip", "--output", str(tmp_path / "f.zip"),
               "--sha256", sha256_file(served / "f.zip")])
    assert ok == 0 and (tmp_path / "f.zip").exists()
