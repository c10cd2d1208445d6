"""Close matches of a name that is not known: the 404 page's suggestions and the forms' "did you mean"."""

from rapidfuzz import fuzz, process

CLOSE_MATCHES = 5
CLOSE_SCORE = 70


def closest(wanted: str, slugs: list[str], limit: int = CLOSE_MATCHES) -> list[str]:
    """The slugs most like `wanted`, best first: those holding it whole from a word's start (`nvidia-h200`
    in `nvidia-h200-sxm`, `h100` in `nvidia-h100-nvl`), then the most similar; equal ones in slug order."""
    wanted = wanted.lower()
    scored = process.extract(wanted, slugs, scorer=fuzz.WRatio, limit=None, score_cutoff=CLOSE_SCORE)

    def rank(match):
        slug, score, _index = match
        holds = f"-{slug}".find(f"-{wanted}") >= 0
        return (not holds, -score, slug)
    return [slug for slug, _score, _index in sorted(scored, key=rank)][:limit]
