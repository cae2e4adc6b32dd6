"""The arithmetic world's own programs, run from a checkout: `python -m uats.arith.train` trains its policies and PRM,
`.train_ensemble` the PRM's ensemble members, `.report` measures them. The world itself (its problems, checker,
tokenizer and model shapes) is the engine's, uats_core/worlds/arith/; these only use it."""
