"""What a million generated tokens cost, from a measured efficiency: the electricity at a price per kWh, and the
rental of the accelerators at a price per accelerator-hour (docs/DATA.md, "Energy")."""

JOULES_PER_KWH = 3.6e6
MILLION = 1e6
SECONDS_PER_HOUR = 3600


def electricity_usd_per_million_tokens(tokens_per_joule: float, usd_per_kwh: float) -> float:
    """A million tokens take 10⁶ ÷ tokens_per_joule joules of the system's wall energy, at usd_per_kwh a 3.6 MJ."""
    return MILLION / tokens_per_joule / JOULES_PER_KWH * usd_per_kwh


def rental_usd_per_million_tokens(tokens_per_s_per_accelerator: float, usd_per_accelerator_hour: float) -> float:
    """An accelerator-hour makes tokens_per_s × 3600 tokens: the hour's price over the millions it makes."""
    return usd_per_accelerator_hour / (tokens_per_s_per_accelerator * SECONDS_PER_HOUR / MILLION)
