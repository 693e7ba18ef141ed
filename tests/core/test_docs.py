"""The documentation stays true: the README's examples run, every relative link in the Markdown
files resolves, and the MkDocs site builds in strict mode (broken links and anchors, pages left
out of the navigation)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Every Markdown file a reader reaches from the README, the site's pages included.
MARKDOWN = sorted([README, ROOT / "CONTRIBUTING.md", ROOT / "queue" / "README.md",
                   ROOT / "queue" / "PROTOCOL.md", ROOT / "bench" / "README.md",
                   *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _relative_links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))  # code is not links
    return [target for target in LINK.findall(text)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


@pytest.mark.parametrize("number", range(len(_python_blocks(README.read_text(encoding="utf-8")))))
def test_the_readme_examples_run(number, minired_client):
    namespace: dict = {}
    code = _python_blocks(README.read_text(encoding="utf-8"))[number]
    exec(compile(code, f"README.md example {number + 1}", "exec"), namespace)
    for name, function in namespace.items():  # the pytest plugin's example: run its test
        if name.startswith("test_"):
            function(minired_client)


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    broken = [target for target in _relative_links(path)
              if not (path.parent / target.split("#", 1)[0]).exists()]
    assert not broken, f"{path.relative_to(ROOT)} links to missing files: {broken}"


def test_a_broken_link_is_found(tmp_path):
    """The check above is not vacuous: it reports a link to a file that is not there."""
    page = tmp_path / "page.md"
    page.write_text("[here](there.md) [site](https://example.com) [self](#top)\n```\n[x](y.md)\n```\n")
    assert _relative_links(page) == ["there.md"]


def test_the_readme_links_to_every_page_of_the_site():
    """The README is the first page: nothing in the site is out of its reach."""
    linked = {(ROOT / target.split("#", 1)[0]).resolve() for target in _relative_links(README)}
    pages = {page.resolve() for page in (ROOT / "docs").rglob("*.md")}
    assert not pages - linked, sorted(str(page.relative_to(ROOT)) for page in pages - linked)


def test_the_site_builds_in_strict_mode(tmp_path):
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                            "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr


def test_strict_mode_fails_on_a_broken_link(tmp_path):
    """The site's own check is not vacuous either: a page with a dead link fails the build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[gone](missing.md)\n")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[0]
    # (without the hook, which adds the queue's and bench's files from the repository)
    config = config.replace("hooks:\n  - scripts/mkdocs_hooks.py\n", "")
    (tmp_path / "mkdocs.yml").write_text(config + "\nnav:\n  - Home: index.md\n")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                            "--site-dir", str(tmp_path / "site")],
                           cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode != 0 and "missing.md" in build.stderr, build.stderr
