"""mkdocs hooks (mkdocs.yml `hooks:`): README as the site's home page, and links from the docs to the
rest of the repository.

- README.md, the repository's front door, is also the site's `index.md`: its links into docs/
  become links between pages, checked by `mkdocs build --strict` as any other; its other links
  point one folder up, into the repository.
- A link from a page to a file outside docs/ (`../harness/plugin.py`, `../reports/README.md`)
  opens that file where the repository is read (a clone, a code host); the site holds docs/ alone,
  so there the link becomes its text. A link to a file that does not exist fails the build, as a
  broken link between pages does.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

# a fenced block or an inline code span (left as they are), or a markdown link [text](target)
_CODE_OR_LINK = re.compile(r"(```.*?```|`[^`\n]*`)|\[([^\]\n]+)\]\(([^)\s]+)\)", re.DOTALL)


def _is_external(target: str) -> bool:
    return target.startswith(("#", "/", "mailto:")) or "://" in target


def _links(markdown: str, rewrite) -> str:
    """``markdown`` with each link outside code replaced by ``rewrite(match, text, target)``."""

    def one(m: re.Match) -> str:
        if m.group(1) or _is_external(m.group(3)):
            return m.group(0)
        return rewrite(m, m.group(2), m.group(3))

    return _CODE_OR_LINK.sub(one, markdown)


def on_files(files, config):
    """Add README.md as ``index.md``, its links made relative to docs/."""
    readme = Path(config.config_file_path).parent / "README.md"
    docs = Path(config.docs_dir).name + "/"

    def from_docs(m: re.Match, text: str, target: str) -> str:
        inside = target[len(docs) :] if target.startswith(docs) else "../" + target
        return f"[{text}]({inside})"

    files.append(File.generated(config, "index.md", content=_links(readme.read_text(), from_docs)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Links to files outside docs/ become their text; one to a missing file fails the build."""
    docs = Path(config.docs_dir).resolve()
    root = Path(config.config_file_path).resolve().parent
    here = (docs / page.file.src_uri).parent

    def outside(m: re.Match, text: str, target: str) -> str:
        path = (here / target.split("#", 1)[0]).resolve()
        if path.is_relative_to(docs):
            return m.group(0)
        if not (path.is_relative_to(root) and path.exists()):
            raise PluginError(f"{page.file.src_uri}: the link {target!r} names no file of the repository")
        return text

    return _links(markdown, outside)
