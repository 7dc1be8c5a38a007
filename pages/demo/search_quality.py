"""A measurable check of the demo's article search: queries the demo really sends (its streams' retrieval queries,
the home page's examples, the offline model's proposals, questions people type) with the corpus topics a good
result must belong to, and queries with no good match in the corpus (the answer must be "no good match")."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CANCERS = ("lung-cancer", "breast-cancer", "colorectal-cancer", "hematologic-malignancies")

# (query, topics a relevant article belongs to); an empty tuple means the corpus has no good match.
QUERIES: list[tuple[str, tuple[str, ...]]] = [
    ("osimertinib resistance MET amplification", ("lung-cancer",)),
    ("neoadjuvant nivolumab NSCLC", ("lung-cancer",)),
    ("KRAS G12C sotorasib adagrasib", ("lung-cancer", "colorectal-cancer")),
    ("osimertinib pembrolizumab NSCLC resistance immunotherapy", ("lung-cancer",)),
    ("EGFR-mutant NSCLC AND clinical trial", ("lung-cancer",)),
    ("CRISPR sickle cell fetal hemoglobin", ("gene-editing",)),
    ("in vivo base editing PCSK9", ("gene-editing",)),
    ("off-target editing", ("gene-editing",)),
    ("CRISPR gene editing", ("gene-editing",)),
    ("dapagliflozin heart failure", ("cardiology",)),
    ("oncology research", CANCERS),
    ("cardiovascular research", ("cardiology",)),
    ("neuroscience research", ("neurology",)),
    ("immunology research", ("immunology",)),
    ("What are the latest papers about CAR-T cell therapy in lymphoma?", ("hematologic-malignancies",)),
    ("semaglutide weight loss", ("metabolic-disease",)),
    ("HER2-positive breast cancer trastuzumab", ("breast-cancer",)),
    ("gut microbiome and antibiotics", ("microbiome", "infectious-disease")),
    ("colorectal cancer screening colonoscopy", ("colorectal-cancer",)),
    ("Alzheimer disease amyloid antibodies", ("neurology",)),
    ("medieval poetry manuscripts", ()),
    ("quantum chromodynamics lattice simulation", ()),
    ("the best pizza in Naples", ()),
]
TOP_K = 8


@dataclass
class QualityReport:
    """Precision of the top results over the topical queries, and how the no-match queries were answered."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def topical(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["expected"]]

    @property
    def precision(self) -> float:
        """Relevant results / results returned, over the topical queries (returning nothing adds nothing)."""
        returned = sum(r["returned"] for r in self.topical)
        return sum(r["relevant"] for r in self.topical) / returned if returned else 0.0

    @property
    def filled(self) -> float:
        """Relevant results / (TOP_K x topical queries): precision that also counts empty slots as misses."""
        return sum(r["relevant"] for r in self.topical) / (TOP_K * len(self.topical)) if self.topical else 0.0

    @property
    def no_match_correct(self) -> int:
        return sum(1 for r in self.rows if not r["expected"] and r["returned"] == 0)

    @property
    def no_match_total(self) -> int:
        return sum(1 for r in self.rows if not r["expected"])


def quality_measure(search: Callable[..., list[Any]], *, k: int = TOP_K) -> QualityReport:
    """Run every query through `search(query=..., limit=k)` and count the results on the expected topics."""
    report = QualityReport()
    for query, expected in QUERIES:
        found = search(query=query, limit=k)
        relevant = sum(1 for a in found if a.topic in expected)
        report.rows.append({"query": query, "expected": expected, "returned": len(found), "relevant": relevant,
                            "off_topic": [a.topic for a in found if a.topic not in expected]})
    return report
