"""Draw one bar chart per workload from benchmarks.json (run with the peers' interpreter,
where matplotlib is installed; it is not a dependency of sessiondb)."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    results = json.loads(Path(sys.argv[1]).read_text())
    docs = Path(sys.argv[2])
    labels = {k: v["label"] for k, v in results["systems"].items()}
    for w, spec in results["workloads"].items():
        rows = [(labels[k], r["median"], k) for k, r in spec["systems"].items() if r.get("median")]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.4))
        names = [r[0] for r in rows][::-1]
        values = [r[1] for r in rows][::-1]
        colors = ["#1f77b4" if r[2].startswith("sessiondb") else "#999999" if r[2].startswith("raw")
                  else "#ff7f0e" for r in rows][::-1]
        ax.barh(names, values, color=colors)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:,.1f}" if v < 100 else f" {v:,.0f}", va="center", fontsize=8)
        ax.set_xlabel(spec["unit"])
        ax.set_title(spec["title"], fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
        ax.margins(x=0.15)
        fig.tight_layout()
        fig.savefig(docs / f"bench-{w}.png", dpi=90)
        plt.close(fig)


if __name__ == "__main__":
    main()
