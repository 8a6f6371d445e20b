"""Helpers shared by test modules (imported as ``helpers.NAME``; tests/ is on sys.path through
tests/conftest.py). Test modules never import each other."""


def contract_result(report, name: str):
    """The result of contract ``name`` in a check report; ``KeyError`` if no such contract ran."""
    return {r.contract: r for r in report.results}[name]


def decode(vocab, ids) -> str:
    """The text of token ``ids`` (a sequence of ints): the inverse of ``vocab.encode`` of a
    ``CharVocab`` or a ``BPEVocab`` (harness/tasks/vocab.py keeps no decoder: only tests read text back)."""
    ids = list(ids)
    if hasattr(vocab, "chars"):
        return "".join(vocab.chars[i] for i in ids)
    return vocab._tokenizer.decode(ids)


def unfinished(results, ablation: str, profile: str) -> list:
    """The run folders of a store's grid without a record: runs interrupted and never finished."""
    from pathlib import Path

    from harness.store.runs import RECORD

    folder = Path(results) / ablation / profile
    return [d for d in sorted(folder.iterdir()) if d.is_dir() and not (d / RECORD).exists()]
