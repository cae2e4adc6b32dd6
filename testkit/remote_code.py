"""What a model's own code would look like on the server: a module whose import leaves a marker, and a
config.json whose auto_map names it (the remote-code guards of the app and the command line use both)."""

from __future__ import annotations

import json
from pathlib import Path


def write_code_module(folder: Path, marker: Path) -> Path:
    """evil.py: importing it writes `marker` (what a model's remote code could do), then defines a config."""
    folder.mkdir(parents=True, exist_ok=True)
    module = folder / "evil.py"
    module.write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import PretrainedConfig\n\n\n"
        "class EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n",
        encoding="utf-8",
    )
    return module


def code_config(class_ref: str) -> bytes:
    """A config.json whose auto_map sends AutoConfig to `class_ref` ('module.Class' or 'folder--module.Class')."""
    return json.dumps(
        {"model_type": "evil", "architectures": ["EvilModel"], "auto_map": {"AutoConfig": class_ref}}
    ).encode()
