"""The small data set the bad-input tests (``test_inputs_*.py``) train on: items with str,
bool and float values, and the same sequences in CRFsuite's data format."""

X = [[{"w": "the"}, {"w": "cat", "cap": False}], [{"w": "a"}, {"w": "dog", "len": 0.6}]] * 8
Y = [["D", "N"], ["D", "N"]] * 8
DATA = "D\tw=the\nN\tw=cat\n\nD\tw=a\nN\tw=dog\n\n" * 8
