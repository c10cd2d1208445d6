"""The reader pages' names of the accelerators table's fields (spec sheet, compare page)."""

LABELS = {
    "memory_gb": "Memory", "addressable_memory_gb": "Addressable memory", "memory_type": "Memory type",
    "memory_bandwidth_gbs": "Memory bandwidth", "native_fp8": "Native FP8", "fp8_speedup": "FP8 speed-up over BF16",
    "native_fp4": "Native FP4", "fp4_formats": "FP4 formats", "interconnect": "Interconnect", "interconnect_gbs": "Interconnect bandwidth",
    "host_interface": "Host interface", "tdp_w": "Max power", "launch_price_usd": "Launch list price",
    "cheapest_gpu_hour_usd": "Cheapest cloud offer (USD per GPU-hour)",
    "vendor": "Vendor", "device_class": "Class", "scope": "Scope", "status": "Status", "announced": "Announced",
    "available": "Available", "family": "Family", "architecture": "Architecture", "form_factor": "Form factor",
    "system": "Part of system",
}
# The fields that say what a product is, rather than what it does: the spec sheet's head, a folded group on compare.
IDENTITY = ("vendor", "device_class", "scope", "status", "announced", "available",
            "family", "architecture", "form_factor", "system")
