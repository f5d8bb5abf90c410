"""Write docs/data-dictionary.md from benchbook.reports.dictionary (tests/test_measures.py checks it is current).

    python tools/write_data_dictionary.py
"""

from pathlib import Path

from benchbook.reports import dictionary

if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "docs" / "data-dictionary.md"
    target.write_text(dictionary.markdown(), encoding="utf-8")
    print(f"wrote {target}")
