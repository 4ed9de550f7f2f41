"""The differential check of one op-script: every writer applies it, every reader reads every image,
each answer is compared with the model's expectation (verdict), and what the oracles' named
exceptions do not explain is a divergence with a signature (checker; what it finds: divergence);
the transformers' pass over the written images (transform); the twin byte comparison of a core
writer with the kernel it reimplements (twins); `vfatfuzz diff`'s run of it (diff); every reader
on a formatter's fresh volume (formatted), and the image size on which a formatter makes a
cluster count (sizing).

Layer: below every subsystem that checks scripts (campaign, hostile seeds, export, study,
selftest), above the oracles. May import vfz.oracles, vfz.model and the contracts; never a
subsystem or cli.
"""
