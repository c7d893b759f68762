"""The contract floor: the plain types every layer exchanges, in a package that imports no layer.

    contract.adapter   Request, RawOutput, TokenCandidate, Capabilities, BackendSettings
    contract.plan      Step, Group, Plan (the run plan every backend replays)
    contract.records   Record, RecordKey (one record per request; what identifies it)
    contract.chat      Renderer, common_prefix_len (prompts rendered once, as token ids)
    contract.options   parse_pairs, parse_slo (KEY=VALUE option values)
    contract.slo       Target, Limit, evaluate (named latency targets: --slo, the capacity search, the report)
    contract.level_stats  a load level's steady state from its records (first wave apart, window, bootstrap)
    contract.capacity  the capacity search's bracket: the next level to measure, a target's capacity
    contract.price     GpuPrice, parse_price: --gpu-hour-usd, one price or a range LO-HI
    contract.models    the built-in models' facts the report shares (labels, dtype bytes, configs)
    contract.registry  Registry: the one lazy name -> "module:attribute" table (backends, both kind
                       registries)
    contract.files     atomic_write_text (a file others read, written whole or not at all)
    contract.docs      doc: a docs page as a reader can open it (a checkout's path, else the project's URL)

The layer order (``tests/test_layers.py``): contract < backends, workloads, reports < harness <
benchmarks. A module here imports only the standard library and other ``contract`` modules.
"""
