"""A static files storage for production: hashed names cached for good, and the tray's ES module imports rewritten
to those names, so a page's modules never mix versions and a browser revalidates none of them."""
from __future__ import annotations

from servestatic.storage import CompressedManifestStaticFilesStorage


class ModuleManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """ServeStatic's compressed manifest storage with Django's rewriting of `import`/`export ... from` turned on."""

    # Without it a hashed tray.js would import its neighbours by their plain names, which are cached briefly.
    support_js_module_import_aggregation = True
