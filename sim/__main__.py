from sim.cli import sim_app

sim_app(prog_name="python -m sim")
