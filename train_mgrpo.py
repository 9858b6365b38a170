"""`mgrpo-train` as a file, for launchers that take a script path:
    torchrun --standalone --nproc_per_node 8 train_mgrpo.py --config configs/qwen3-gpu.json --out runs/qwen3 --set accel.main_device=null,accel.sub_device=null
Written by `mgrpo-config --script train_mgrpo.py` from nbs/22_cli.ipynb (`make sync` checks it); do not edit by hand."""
from mgrpo_ref.cli import mgrpo_train

if __name__ == '__main__': mgrpo_train()
