"""The what-fits question's data: each accelerator as a sizing question needs it, read once.

The what-fits page reads these rows and asks domain/fits.py in Python; the
`what-fits` canned query, for analysts, is built on the same rows and asks the
same questions through the `llm_fit` SQL function (plugins/sizing_sql.py).
Both read the accelerators through DEVICES, so they agree by construction.
"""

# Common table expressions after a `p` of model, checkpoint, weight_format and kv_format (a checkpoint
# given wins; weight_format is read when checkpoint is ''): the weights' bits and formats, and `device`,
# each accelerator with the memory the runtime sees and the figures of its speed.
DEVICES = """\
weights as (
  select c.bits, c.formats from p join checkpoints c on c.slug = p.checkpoint
  union all
  select uniform_bits(coalesce(f.effective_bits, f.bits)), json_array(f.slug)
  from p join number_formats f on f.slug = p.weight_format where p.checkpoint = ''
),
needed_formats as (
  select n.slug, n.family, n.kind from weights, json_each(weights.formats) j join number_formats n on n.slug = j.value
  union select n.slug, n.family, n.kind from p join number_formats n on n.slug = p.kv_format
),
weight_families as (
  -- the floating-point families the weights compute in, narrowest first (integer
  -- GGUF blocks are dequantized: they compute in BF16/FP16)
  select n.family, min(n.bits) as bits from weights, json_each(weights.formats) j
    join number_formats n on n.slug = j.value
  where n.family not like 'int%' group by n.family
),
supported as (
  select fs.accelerator, n.slug, n.family, n.kind from format_support fs join number_formats n on n.slug = fs.format
  where coalesce(fs.supported, 1) = 1  -- a cited "not supported" claim is no support
),
device as (
  -- memory as the runtime sees it where measured, else the printed capacity (the smaller of
  -- memory and addressable memory) read as GiB; DPUs move data and do not run models
  select a.slug, a.name, a.vendor, a.family, a.device_class, a.memory_bandwidth_gbs,
    coalesce(r.memory_gb, round(coalesce(min(a.memory_gb, a.addressable_memory_gb), a.memory_gb,
      a.addressable_memory_gb) * 1.073741824, 2)) as memory,
    (r.memory_gb is null or r.basis = 'estimated') as memory_estimated,
    -- dense matrix peak of the narrowest weight format the device computes in, else BF16/FP16
    coalesce((select t.tflops from weight_families w join throughput t on t.precision = w.family
                where t.accelerator = a.slug and t.sparsity = 'dense' and t.engine = 'matrix'
                and t.accumulate = 'fp32'
                order by w.bits limit 1),
             (select max(t.tflops) from throughput t where t.accelerator = a.slug and t.sparsity = 'dense'
                and t.accumulate = 'fp32'
                and t.engine = 'matrix' and t.precision in ('bf16', 'fp16'))) as dense_tflops,
    a.interconnect_gbs / 2 as link_gbs,
    -- the best memory bandwidth measured on the device, as a share of its datasheet figure
    (select max(ar.bandwidth_gbs) / a.memory_bandwidth_gbs from achieved_rates ar
     where ar.accelerator = a.slug and ar.measure = 'memory-bandwidth') as bandwidth_share,
    -- native: every format of the weights and the KV cache is supported (the same format, or a
    -- plain member of a family the device lists); unknown when the device lists no format
    iif(exists (select 1 from supported s where s.accelerator = a.slug),
        not exists (select 1 from needed_formats n where not exists (
          select 1 from supported s where s.accelerator = a.slug and (s.slug = n.slug
            or (s.family = n.family and (n.kind = 'family' or (s.kind = 'family' and n.kind = 'float')))))),
        null) as native
  from accelerators a left join runtime_memory r on r.accelerator = a.slug
  where a.device_class <> 'dpu'
)"""

# The page's read: the device rows and the weights, for one model, weights and KV format.
PAGE = f"""\
with p as (select :model as model, :checkpoint as checkpoint, :weight_format as weight_format,
                  :kv_format as kv_format),
{DEVICES}
select d.slug, d.name, d.vendor, d.family, d.device_class, d.memory_bandwidth_gbs, d.memory, d.memory_estimated,
  d.dense_tflops, d.link_gbs, d.bandwidth_share, d.native, w.bits
from device d, weights w where d.memory is not null order by d.slug"""

# The canned query: its parameters checked (:_checked_what_fits, plugins/query_checks.py), then every
# accelerator sized by llm_fit.
CANNED = f"""\
with checked as (select :_checked_what_fits as ok),
p as (
  select trim(:model) as model, trim(:checkpoint) as checkpoint, trim(:weight_format) as weight_format,
    trim(:kv_format) as kv_format, context_tokens(nullif(trim(:context), '')) as context,
    cast(coalesce(nullif(trim(:batch), ''), '1') as integer) as batch,
    cast(nullif(trim(:tp), '') as integer) as tp, cast(nullif(trim(:pp), '') as integer) as pp,
    coalesce(nullif(lower(trim(:runtime)), ''), 'vllm') as runtime,
    cast(nullif(trim(:usable_fraction), '') as real) as fraction,
    cast(nullif(trim(:max_num_seqs), '') as integer) as max_num_seqs
),
{DEVICES},
sized as materialized (
  select d.*,
    iif(p.context > m.max_context,
      json_object('fits', 0, 'problem', printf('%s reads at most %,d tokens', m.name, m.max_context)),
      llm_fit(m.architecture, w.bits,
        json_object('memory_gb', d.memory, 'bandwidth_gbs', d.memory_bandwidth_gbs,
                    'dense_tflops', d.dense_tflops, 'link_gbs', d.link_gbs, 'slug', d.slug,
                    'bandwidth_share', d.bandwidth_share),
        json_object('context', p.context, 'batch', p.batch, 'kv_bits', coalesce(k.effective_bits, k.bits),
                    'tp', p.tp, 'pp', coalesce(p.pp, 1), 'runtime', p.runtime, 'fraction', p.fraction,
                    'max_num_seqs', p.max_num_seqs))) as s
  from p join models m on m.slug = p.model join number_formats k on k.slug = p.kv_format,
    weights w, device d
  where d.memory is not null
),
fits as materialized (
  select slug as accelerator, name, vendor, family, device_class, round(memory, 1) as memory_gb,
    memory_estimated, native,
    json_extract(s, '$.fits') as fits, json_extract(s, '$.tp') as tp, json_extract(s, '$.pp') as pp,
    json_extract(s, '$.devices') as devices_needed,
    round(json_extract(s, '$.weights_gb'), 1) as weights_gb,
    round(json_extract(s, '$.kv_gb_per_sequence'), 1) as kv_cache_gb_per_sequence,
    round(json_extract(s, '$.weights_gb_per_device'), 1) as weights_gb_per_device,
    round(json_extract(s, '$.kv_gb_per_device'), 1) as kv_cache_gb_per_device,
    round(json_extract(s, '$.reserve_gb_per_device'), 1) as reserve_gb_per_device,
    round(json_extract(s, '$.headroom_gb_per_device'), 1) as headroom_gb_per_device,
    round(json_extract(s, '$.needed_gb_per_device'), 1) as needed_gb_per_device,
    round(json_extract(s, '$.usable_gb_per_device'), 1) as usable_gb_per_device,
    round(json_extract(s, '$.kv_pool_gb_per_device'), 1) as kv_pool_gb_per_device,
    round(json_extract(s, '$.shortfall_gb_per_device'), 1) as shortfall_gb_per_device,
    json_extract(s, '$.smallest_devices') as smallest_devices_that_fit,
    json_extract(s, '$.smallest_tp') as smallest_tp, json_extract(s, '$.smallest_pp') as smallest_pp,
    json_extract(s, '$.runtime') as runtime,
    -- speed only where it fits: a ceiling from the device's limits, the expected figure from the
    -- speed model fitted on published measurements (domain/speed.py)
    iif(json_extract(s, '$.fits'), round(json_extract(s, '$.tokens_per_s_per_sequence'), 1), null) as ceiling_tokens_per_s,
    iif(json_extract(s, '$.fits'), round(json_extract(s, '$.tokens_per_s'), 1), null) as ceiling_batch_tokens_per_s,
    iif(json_extract(s, '$.fits'), json_extract(s, '$.bound'), null) as bound,
    iif(json_extract(s, '$.fits'), round(json_extract(s, '$.first_token_ms'), 1), null) as first_token_ms,
    iif(json_extract(s, '$.fits'), round(json_extract(s, '$.expected_tokens_per_s'), 1), null)
      as expected_batch_tokens_per_s,
    iif(json_extract(s, '$.fits'), round(json_extract(s, '$.expected_tokens_per_s_per_sequence'), 1), null)
      as expected_tokens_per_s,
    iif(json_extract(s, '$.fits'), json_extract(s, '$.expected_basis'), null) as expected_basis,
    json_extract(s, '$.problem') as problem,
    (select group_concat(printf('%.2f %s', price, currency), '; ')
       from (select min(price_per_gpu_hour) as price, currency from cloud_offers o
             where o.accelerator = sized.slug and o.current and o.price_per_gpu_hour is not null
             group by currency order by currency)
    ) as cheapest_per_gpu_hour
  from sized
)
select fits.* from checked cross join fits where checked.ok
order by coalesce(fits.fits and fits.native, 0) desc, fits.fits desc, fits.devices_needed,
  fits.ceiling_tokens_per_s desc, fits.accelerator"""
