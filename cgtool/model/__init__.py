"""Records and their JSON: frame, finding, rules, report, trace, job, lint result. No torch, no I/O."""
