"""The demo's own words for the offline model: the facts that name what its pages show (`Stream: ...`, `Article: ...`,
`Report: ...`), the words too general to name a field of a proposal and the subject it falls back on
(docs/offline-model.md, "Your pages' words"); and in German, Spanish and French the nouns of its pages
(docs/offline-model.md, "Languages"), so that "Erstelle einen Forschungsstrom über Onkologie" reads as "create a
research stream about Onkologie", and the labels of its server actions' buttons. The offline model's own vocabulary
(questions, asking for a change, searching, grammar) is built in; the values of a choice ("wöchentlich") are read
through the demo's catalogs (its model choices), not listed here."""
from __future__ import annotations

from django.utils.translation import gettext_noop

from chat.providers.offline import glossary, vocabulary

# "What is this about?" on a stream's, an article's or a report's page is about the entity its first such fact names;
# "change the report frequency" names the frequency (the demo's words for its kind of thing name no field); a proposal
# with no subject anywhere is about research.
vocabulary.add(entity_keys=("stream", "article", "report"), general_words=("stream", "report", "research"), fallback_topic="research")

# The buttons the offline model offers for the demo's server actions are labelled with the action's name in words
# (chat.infra.registration.title_shown: "update_config" -> "Update config") through the catalogs: translated here.
SERVER_ACTION_TITLES = (gettext_noop("Create stream"), gettext_noop("Update config"), gettext_noop("Delete entity"),
                        gettext_noop("Validate form"), gettext_noop("Run test report"), gettext_noop("Execute search"),
                        gettext_noop("Apply filters"))

glossary.add("de", {
    "forschungsstr*": "research stream",  # Forschungsstrom, -ströme, -stream, -streams
    "strom": "stream", "stroms": "stream", "ströme": "streams", "strömen": "streams", "stream": "stream", "streams": "streams",
    "bericht": "report", "berichte": "reports", "berichten": "reports", "berichts": "report", "testbericht": "test report",
    "berichtshäufigkeit": "report frequency", "artikel": "articles", "fachartikel": "articles", "studie": "study",
    "studien": "studies", "kanal": "channel", "kanäle": "channels", "kanälen": "channels", "thema": "topic", "themen": "topics",
    "abfrage": "query", "abfragen": "queries", "suchanfrage": "query", "suchanfragen": "queries", "portfolio": "portfolio",
    "ideen": "ideas", "idee": "idea", "formular": "form", "vorlage": "template", "validiere": "validate",
    "validieren": "validate", "prüfe": "validate", "prüfen": "validate", "überprüfe": "validate", "überprüfen": "validate",
    "einen testbericht erstellen": "run a test report", "testbericht erstellen": "run a test report",
    "erstelle einen testbericht": "run a test report", "spalte": "column", "suchfilter": "search filters", "kategorien": "categories",
    "zweck": "purpose", "quellen": "sources", "einstellungen": "settings",
})

glossary.add("es", {
    "flujo de investigación": "research stream", "flujos de investigación": "research streams", "flujo": "stream",
    "flujos": "streams", "informe": "report", "informes": "reports", "informe de prueba": "test report",
    "generar un informe de prueba": "run a test report", "genera un informe de prueba": "run a test report",
    "frecuencia de los informes": "report frequency", "artículo": "article", "artículos": "articles", "estudio": "study",
    "estudios": "studies", "canal": "channel", "canales": "channels", "tema": "topic", "temas": "topics",
    "consulta": "query", "consultas": "queries", "cartera": "portfolio", "portafolio": "portfolio", "ideas": "ideas",
    "idea": "idea", "formulario": "form", "plantilla": "template", "valida": "validate", "validar": "validate",
    "columna": "column", "filtros": "filters", "filtros de búsqueda": "search filters", "categorías": "categories",
    "propósito": "purpose", "fuentes": "sources", "investigación": "research",
})

glossary.add("fr", {
    "flux de recherche": "research stream", "flux": "stream", "rapport": "report", "rapports": "reports",
    "rapport de test": "test report", "lancer un rapport de test": "run a test report",
    "lance un rapport de test": "run a test report", "fréquence des rapports": "report frequency", "article": "article",
    "articles": "articles", "étude": "study", "études": "studies", "canal": "channel", "canaux": "channels",
    "sujet": "topic", "sujets": "topics", "thème": "topic", "thèmes": "topics", "requête": "query", "requêtes": "queries",
    "portefeuille": "portfolio", "idées": "ideas", "idée": "idea", "formulaire": "form", "modèle": "template",
    "valide": "validate", "valider": "validate", "colonne": "column", "filtres": "filters",
    "filtres de recherche": "search filters", "catégories": "categories", "objectif": "purpose", "sources": "sources",
})
