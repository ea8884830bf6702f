"""python -m jx.cli"""
from jx.cli.main import main

main(prog_name="jx")
