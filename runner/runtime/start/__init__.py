"""Start-up: one run of `runner stream`, from the plan and the checkpoint to a started query."""
