"""The API contract a user reads lives in the repository: README.md and ARCHITECTURE.md point to
``docs/api_contract.md``, the Sphinx site includes it, and every public name that
``tests/test_api_contract.py`` checks is named in it."""
from __future__ import annotations

import re
from pathlib import Path

from test_api_contract import TOP_LEVEL

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "api_contract.md"


def test_every_api_contract_the_readme_and_architecture_name_is_in_the_repository():
    for doc in ("README.md", "ARCHITECTURE.md"):
        text = (ROOT / doc).read_text()
        named = re.findall(r"[\w./-]*API\.md|[\w./-]*api_contract\.md", text)
        assert named, f"{doc} names no API contract"
        for path in named:
            assert (ROOT / path).is_file(), f"{doc} names {path}, which is not in the repository"


def test_the_contract_is_in_the_sphinx_site_and_names_every_checked_name():
    index = (ROOT / "docs" / "index.rst").read_text()
    assert re.search(r"^\s+api_contract\s*$", index, re.M), "docs/index.rst does not include api_contract"
    text = CONTRACT.read_text()
    missing = [name for name in TOP_LEVEL if not re.search(rf"\b{re.escape(name)}\b", text)]
    assert not missing, f"names checked by tests/test_api_contract.py but not in docs/api_contract.md: {missing}"
