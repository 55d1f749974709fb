"""Readers of each raw format: hand-made files (good and malformed) and the vendored data."""

from __future__ import annotations

import gzip
import zipfile

import pytest
from helpers.paths import RAW

from crfsdca.data.readers import (
    OCR_ATTRIBUTES,
    parse_conll,
    parse_mrg,
    parse_pos,
    read_conll,
    read_ocr,
    read_treebank,
)
from crfsdca.errors import DataFormatError

# ----------------------------------------------------------------------------- OCR


def _ocr_row(id_, letter, next_id, word, pos, fold, on=()):
    pixels = ["1" if j in on else "0" for j in range(128)]
    return "\t".join([str(id_), letter, str(next_id), str(word), str(pos), str(fold), *pixels])


def _write_ocr(path, rows, trailing_tab=True):
    text = "".join(r + ("\t" if trailing_tab else "") + "\n" for r in rows)
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_ocr_words_folds_and_pixels(tmp_path):
    rows = [
        _ocr_row(1, "c", 2, 1, 1, 0, on=(0, 9)),
        _ocr_row(2, "a", 3, 1, 2, 0),
        _ocr_row(3, "t", -1, 1, 3, 0, on=(127,)),
        _ocr_row(4, "o", 5, 2, 1, 9, on=(8,)),
        _ocr_row(5, "x", -1, 2, 2, 9),
        _ocr_row(6, "i", -1, 3, 1, 3),
    ]
    corpus = read_ocr(_write_ocr(tmp_path / "letter.data.gz", rows), test_fold=9)
    assert [s.labels for s in corpus.train] == [["c", "a", "t"], ["i"]]
    assert [s.labels for s in corpus.test] == [["o", "x"]]
    assert corpus.train[0].attributes == [["p_0_0", "p_1_1"], [], ["p_15_7"]]
    assert corpus.test[0].attributes[0] == ["p_1_0"]
    assert corpus.fixed_attributes == OCR_ATTRIBUTES and len(OCR_ATTRIBUTES) == 128


@pytest.mark.parametrize("bad_row, message", [
    ("1\tc\t2\t1\t1\t0\t" + "\t".join(["0"] * 127), r"letter\.data\.gz:2: expected 134 .*got 133"),
    (_ocr_row(9, "C", -1, 1, 2, 0), r":2: column 2: expected a letter a-z, got 'C'"),
    (_ocr_row(9, "c", -1, 1, 2, 0)[:-1] + "2", r":2: pixel columns: expected 0 or 1, got '2'"),
    (_ocr_row(9, "c", -1, 1, 3, 0), r":2: word 1: position 3 follows position 1, expected 2"),
    (_ocr_row(9, "c", -1, 1, 2, 4), r":2: word 1: fold 4 differs from the word's fold 0"),
    (_ocr_row(9, "c", -1, "x", 2, 0), r":2: columns 4-6 .*expected integers"),
])
def test_ocr_malformed(tmp_path, bad_row, message):
    rows = [_ocr_row(1, "a", 2, 1, 1, 0), bad_row]
    path = _write_ocr(tmp_path / "letter.data.gz", rows)
    with pytest.raises(DataFormatError, match=message):
        read_ocr(path)


def test_ocr_vendored_fold9_gives_papers_n():
    corpus = read_ocr(RAW / "letter.data.gz", test_fold=9)
    assert len(corpus.train) == 6202 and len(corpus.test) == 675
    assert sum(len(s) for s in corpus.train) + sum(len(s) for s in corpus.test) == 52152
    assert {y for s in corpus.train for y in s.labels} == set("abcdefghijklmnopqrstuvwxyz")


# ----------------------------------------------------------------------------- CoNLL

CONLL_TEXT = """-DOCSTART- -DOCSTART- O

The DT B-NP
cat NN I-NP
sat VBD B-VP

Dogs NNS B-NP
"""


def test_conll_sentences_columns_and_docstart():
    sents = parse_conll(CONLL_TEXT, "x", ["w", "pos", "y"])
    assert [len(s) for s in sents] == [1, 3, 1]
    assert sents[1].fields == {"w": ["The", "cat", "sat"], "pos": ["DT", "NN", "VBD"]}
    assert sents[1].labels == ["B-NP", "I-NP", "B-VP"]
    dropped = parse_conll(CONLL_TEXT, "x", ["w", "pos", "y"], keep_docstart=False)
    assert [s.fields["w"] for s in dropped] == [["The", "cat", "sat"], ["Dogs"]]


def test_conll_malformed_line_names_file_and_line():
    text = CONLL_TEXT.replace("cat NN I-NP", "cat I-NP")
    with pytest.raises(DataFormatError, match=r"^train\.txt:4: expected 3 whitespace-separated "
                                              r"columns \(w pos y\), got 2: 'cat I-NP'"):
        parse_conll(text, "train.txt", ["w", "pos", "y"])


def test_conll_zip_and_directory_sources(tmp_path):
    archive = tmp_path / "c.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("c/train.txt", CONLL_TEXT)
        zf.writestr("c/test.txt", "A DT B-NP\n")
    corpus = read_conll(archive, "c/train.txt", "c/test.txt")
    assert len(corpus.train) == 3 and corpus.test[0].labels == ["B-NP"]
    assert corpus.sources == [archive]
    with pytest.raises(DataFormatError, match=r"c\.zip: the archive has no member 'c/dev.txt'"):
        read_conll(archive, "c/dev.txt", None)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.txt").write_text(CONLL_TEXT)
    corpus = read_conll(tmp_path / "d", "train.txt", None)
    assert len(corpus.train) == 3 and corpus.test is None


def test_conll_bad_encoding_names_line(tmp_path):
    (tmp_path / "train.txt").write_bytes(b"a DT O\n\nb\xe9 NN O\n")
    with pytest.raises(DataFormatError, match=r"train\.txt:3: not valid utf-8"):
        read_conll(tmp_path, "train.txt", None)


def test_conll2000_vendored_counts():
    corpus = read_conll(RAW / "conll2000.zip", "conll2000/train.txt", "conll2000/test.txt")
    assert len(corpus.train) == 8936 and len(corpus.test) == 2012
    assert sum(len(s) for s in corpus.train) == 211727
    train_tags = {y for s in corpus.train for y in s.labels}
    test_tags = {y for s in corpus.test for y in s.labels}
    assert len(train_tags) == 22
    assert test_tags - train_tags == {"I-LST"}  # a test-only tag (docs/reproduction/table1.md)


def test_conll2002_dutch_vendored_counts_keep_docstart():
    corpus = read_conll(RAW / "conll2002.zip", "conll2002/ned.train", "conll2002/ned.testb")
    assert len(corpus.train) == 15806 and len(corpus.test) == 5195
    assert len({y for s in corpus.train for y in s.labels}) == 9


# ----------------------------------------------------------------------------- treebank

POS_TEXT = """

[ Pierre/NNP Vinken/NNP ]
,/, will/MD join/VB
[ the/DT board/NN ]
./.

[ He/PRP ]
said/VBD *T*-1/-NONE- ``/`` it/PRP is/VBZ 1\\/2/CD
[ of/IN running/VBG|NN ]
./. ''/''
======================================
Next/JJ text/NN
"""


def test_pos_reader_splits_sentences_and_cleans_tokens():
    sents = parse_pos(POS_TEXT, "wsj_0001.pos")
    assert [s.fields["w"] for s in sents] == [
        ["Pierre", "Vinken", ",", "will", "join", "the", "board", "."],
        ["He", "said", "``", "it", "is", "1/2", "of", "running", ".", "''"],
        ["Next", "text"],
    ]
    assert sents[1].labels == ["PRP", "VBD", "``", "PRP", "VBZ", "CD", "IN", "VBG", ".", "''"]


def test_pos_reader_malformed_token():
    with pytest.raises(DataFormatError, match=r"wsj_0001\.pos:3: expected a token 'word/TAG', "
                                              r"got 'Vinken'"):
        parse_pos("\n\n[ Pierre/NNP Vinken ]\n", "wsj_0001.pos")


MRG_TEXT = """( (S (NP-SBJ (NNP Pierre) (NNP Vinken) )
    (VP (MD will) (VP (VB join) (NP (-NONE- *-1) ) (NP (DT the) (NN board) )))
    (. .) ))
( (S (NP-SBJ (PRP He) ) (VP (VBD said) (NP (CD 1\\/2) )) (. .) ))
"""


def test_mrg_reader():
    sents = parse_mrg(MRG_TEXT, "wsj_0001.mrg")
    assert [s.fields["w"] for s in sents] == [
        ["Pierre", "Vinken", "will", "join", "the", "board", "."], ["He", "said", "1/2", "."]]
    assert sents[0].labels == ["NNP", "NNP", "MD", "VB", "DT", "NN", "."]
    with pytest.raises(DataFormatError, match=r"wsj_0001\.mrg:5: unbalanced '\(': the file ends"):
        parse_mrg(MRG_TEXT + "( (S (NN x) )\n", "wsj_0001.mrg")
    with pytest.raises(DataFormatError, match=r"wsj_0001\.mrg:1: unbalanced '\)'"):
        parse_mrg(") (NN x)", "wsj_0001.mrg")


def test_treebank_directory_split_by_section(tmp_path):
    """A full-treebank layout: wsj/SS/wsj_SSNN.pos, sections 0-18 train, 22-24 test."""
    for section, number in [(0, 1), (18, 99), (20, 1), (22, 5), (24, 54)]:
        d = tmp_path / "wsj" / f"{section:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"wsj_{section:02d}{number:02d}.pos").write_text(f"S{section}/NN ./.\n")
    corpus = read_treebank(tmp_path / "wsj", split_by="section")  # default sections
    assert [s.fields["w"][0] for s in corpus.train] == ["S0", "S18"]
    assert [s.fields["w"][0] for s in corpus.test] == ["S22", "S24"]
    assert len(corpus.sources) == 4  # section 20 is not read
    corpus = read_treebank(tmp_path / "wsj", pattern="2*/*.pos", split_by="section",
                           train_range=[[20, 20], [24, 24]], test_range=[22, 22])
    assert [s.fields["w"][0] for s in corpus.train] == ["S20", "S24"]
    assert [s.fields["w"][0] for s in corpus.test] == ["S22"]


def test_treebank_sample_vendored_split():
    corpus = read_treebank(RAW / "treebank.zip", pattern="treebank/tagged/wsj_*.pos")
    n_train, n_test = len(corpus.train), len(corpus.test)
    assert (n_train, n_test) == (3692, 247)
    assert n_train + n_test == 3939  # vs 3,914 parsed sentences of the .mrg files
    tags = {y for s in corpus.train + corpus.test for y in s.labels}
    assert "-NONE-" not in tags and not any("|" in t for t in tags)
    assert len(tags) <= 46
    mrg = read_treebank(RAW / "treebank.zip", pattern="treebank/combined/wsj_*.mrg")
    assert len(mrg.train) + len(mrg.test) == 3914
