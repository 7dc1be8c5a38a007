"""How the offline model understands requests written in German, Spanish and French: a glossary per language turns
the words its intents look for ("Erstelle", "¿Cuántos", "Que peux-tu faire") into the English ones they match
("create", "how many", "what can you do"); every other word (the user's subject, a name) stays as written. A site
adds the words of its own pages with `glossary.add(language, {...})` (pages/demo/vocabulary.py does)."""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

# a word for matching: letters and digits; apostrophes and hyphens separate words ("qu'est-ce" is qu / est / ce)
_TOKEN = re.compile(r"[^\W_]+")
PHRASE_WORDS_MAX = 8


def fold(word: str) -> str:
    """A word as the glossary compares it: case-folded, accents dropped ("Ströme" -> "strome", "¿Qué" -> "que")."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@dataclass
class _Language:
    """One language's entries: phrases by their words as written (case-folded) and without accents, word prefixes."""

    exact: dict[tuple[str, ...], str] = field(default_factory=dict)  # "où" is "where", "ou" is "or"
    folded: dict[tuple[str, ...], str] = field(default_factory=dict)  # typed without its accents: "cuantos"
    prefixes: list[tuple[str, str]] = field(default_factory=list)  # (folded prefix, English), longest first

    def get(self, words: tuple[str, ...]) -> str | None:
        found = self.exact.get(words)
        return found if found is not None else self.folded.get(tuple(fold(w) for w in words))


class Glossary:
    """Words and phrases of other languages, each with the English an intent matches, by language code."""

    def __init__(self) -> None:
        self._languages: dict[str, _Language] = {}

    def add(self, language: str, entries: Mapping[str, str]) -> None:
        """Add `entries` ({"erstelle": "create", "wie viele": "how many", "such*": "search"}) for `language` ("de");
        a key ending in "*" is a prefix of one word; the English may be "" (a word that means nothing here). A key
        added again takes its new meaning."""
        lang = self._languages.setdefault(language.split("-")[0].lower(), _Language())
        for key, english in entries.items():
            if key.endswith("*"):
                prefix = fold(key[:-1])
                lang.prefixes = sorted([(p, e) for p, e in lang.prefixes if p != prefix] + [(prefix, english)], key=lambda pe: -len(pe[0]))
                continue
            words = tuple(w.casefold() for w in _TOKEN.findall(key))
            if words:
                lang.exact[words] = english
                lang.folded.setdefault(tuple(fold(w) for w in words), english)

    def languages(self) -> list[str]:
        return sorted(self._languages)

    def gloss(self, text: str, language: str | None) -> str:
        """`text` with the glossary's words and phrases of `language` in English (the longest phrase first), the
        rest as written; `text` itself for English or a language without a glossary. A glossed word joined by a
        hyphen or an apostrophe ("peux-tu", "l'article") is set apart by a space."""
        lang = self._languages.get((language or "").split("-")[0].lower())
        if lang is None or not text:
            return text
        spans = [(m.start(), m.end(), m.group(0).casefold()) for m in _TOKEN.finditer(text)]
        pieces: list[tuple[int, int, str | None]] = []  # (start, end, its English or None to keep it)
        i = 0
        while i < len(spans):
            count, english = self._match(lang, spans, i)
            pieces.append((spans[i][0], spans[i + count - 1][1], english))
            i += count
        if all(english is None for _s, _e, english in pieces):
            return text
        out: list[str] = []
        at, glossed_before = 0, False
        for start, end, english in pieces:
            between = text[at:start]
            if at and (glossed_before or english is not None) and between in ("-", "'", "\u2019"):  # a typographic apostrophe too
                between = " "
            out += [between, text[start:end] if english is None else english]
            at, glossed_before = end, english is not None
        out.append(text[at:])
        return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()

    def _match(self, lang: _Language, spans: list[tuple[int, int, str]], i: int) -> tuple[int, str | None]:
        """(how many words, English) of the longest entry that starts at word `i`; (1, None) when none does."""
        for count in range(min(PHRASE_WORDS_MAX, len(spans) - i), 0, -1):
            english = lang.get(tuple(s[2] for s in spans[i:i + count]))
            if english is not None:
                return count, english
        first = fold(spans[i][2])
        return 1, next((e for p, e in lang.prefixes if first.startswith(p)), None)


glossary = Glossary()

# The words the built-in intents look for: questions, greetings and thanks, asking for a change, acting (search,
# calculate, show), and the grammar around them (so that the subject is what is left). A page's own nouns come from
# the page's app (glossary.add).
glossary.add("de", {
    # questions and asking what it can do
    "was": "what", "wer": "who", "wie": "how", "warum": "why", "wieso": "why", "wann": "when", "wo": "where",
    "welche": "which", "welcher": "which", "welches": "which", "welchen": "which", "wie viele": "how many",
    "wie viel": "how much", "wie viele habe ich": "how many do I have", "was ist": "what is", "was sind": "what are",
    "was kannst du": "what can you do", "was können sie": "what can you do", "was kann ich": "what can I do",
    "was kannst du hier": "what can you do here", "was können sie hier": "what can you do here",
    "tun": "do", "machen": "do", "ist": "is", "sind": "are", "gibt es": "are there",
    "erkläre": "explain", "erklär": "explain", "erklären": "explain", "beschreibe": "describe", "zusammenfassen": "summarize",
    "fasse zusammen": "summarize", "fasse": "summarize", "zusammenfassung": "summary", "worum geht es": "what is it about",
    "worum": "what about", "geht": "is", "darum": "about it",
    # greetings, thanks, goodbye
    "hallo": "hello", "guten tag": "hello", "guten morgen": "hello", "servus": "hello", "moin": "hello", "hilfe": "help",
    "hilf mir": "help me", "danke": "thanks", "vielen dank": "thank you very much", "danke schön": "thank you very much",
    "danke sehr": "thank you very much", "tschüss": "bye", "tschüs": "bye", "auf wiedersehen": "goodbye", "bis später": "see you later",
    # asking for a change
    "erstelle": "create", "erstellen": "create", "erstell": "create", "erstellt": "create", "lege an": "create",
    "anlegen": "create", "leg an": "create", "neu": "new", "neue": "new", "neuen": "new", "neuer": "new", "neues": "new",
    "ändere": "change", "ändern": "change", "änder": "change", "aktualisiere": "update", "aktualisieren": "update",
    "bearbeite": "edit", "bearbeiten": "edit", "benenne um": "rename", "umbenennen": "rename", "benenne": "rename",
    "füge hinzu": "add", "hinzufügen": "add", "füge": "add", "entferne": "remove", "entfernen": "remove",
    "lösche": "delete", "löschen": "delete", "schlage vor": "suggest", "schlag vor": "suggest", "vorschlagen": "suggest",
    "schlage": "suggest", "schlag": "suggest", "vorschlag": "proposal", "vorschläge": "suggestions", "empfiehl": "recommend",
    "fülle aus": "fill", "füllen sie aus": "fill", "ausfüllen": "fill", "fülle": "fill", "füllen": "fill", "füll": "fill",
    "analysiere": "analyze", "analysieren": "analyze", "bewerte": "evaluate", "generiere": "generate", "schreibe": "write",
    "schreib": "write", "übersetze": "translate", "übersetzen": "translate", "mehr": "more", "weitere": "more",
    "andere": "different", "anderen": "different", "anderer": "different", "anderes": "different", "ein anderer": "a different",
    "eine andere": "a different", "einen anderen": "a different", "tippe": "type", "tippen": "type", "ich tippe": "I'll type",
    "ihn": "it", "selbst": "myself", "selber": "myself",
    # acting
    "suche": "search", "suchen": "search", "such": "search", "finde": "find", "finden": "find", "zeige": "show",
    "zeig": "show", "zeigen": "show", "berechne": "calculate", "berechnen": "calculate", "rechne": "calculate",
    "rechnen": "calculate", "öffne": "open", "öffnen": "open", "liste": "list", "prüfe": "check", "prüfen": "check",
    "zähle": "count", "führe aus": "run", "starte": "run", "hole": "get", "lies": "read",
    "uhrzeit": "time", "wie spät ist es": "what time is it", "datum": "date", "webseite": "web page", "im web": "on the web",
    # grammar around the request
    "ich": "I", "du": "you", "sie": "you", "mir": "me", "mich": "me", "mein": "my", "meine": "my", "meinen": "my",
    "meinem": "my", "meiner": "my", "meines": "my", "habe": "have", "hab": "have", "hast": "have", "hat": "has",
    "haben": "have", "kannst": "can", "können": "can", "kann": "can", "könntest": "could", "könnten": "could",
    "möchte": "would like", "möchten": "would like", "will": "want", "willst": "want", "wollen": "want",
    "ein": "a", "eine": "a", "einen": "a", "einem": "a", "einer": "a", "eines": "a", "der": "the", "die": "the",
    "das": "the", "den": "the", "dem": "the", "des": "the", "über": "about", "zu": "to", "zum": "to", "zur": "to",
    "für": "for", "mit": "with", "von": "from", "vom": "from", "und": "and", "oder": "or", "bitte": "please",
    "es": "it", "dies": "this", "diese": "this", "dieser": "this", "dieses": "this", "diesen": "this", "hier": "here",
    "seite": "page", "jetzt": "now", "etwas": "something", "auf": "on", "im": "in", "in": "in", "nicht": "not",
    "noch": "still", "mal": "", "doch": "", "denn": "", "gerne": "please", "gern": "please", "name": "name",
    "namen": "name", "häufigkeit": "frequency", "frequenz": "frequency",
})

glossary.add("es", {
    "qué": "what", "que": "what", "quién": "who", "cómo": "how", "por qué": "why", "cuándo": "when", "dónde": "where",
    "cuál": "which", "cuáles": "which", "cuántos": "how many", "cuántas": "how many", "cuánto": "how much",
    "cuánta": "how much", "qué puedes hacer": "what can you do", "qué puede hacer": "what can you do",
    "qué sabes hacer": "what can you do", "qué puedes hacer aquí": "what can you do here",
    "qué puede hacer aquí": "what can you do here", "hacer": "do", "es": "is", "son": "are", "hay": "are there",
    "explica": "explain", "explícame": "explain", "explicar": "explain", "describe": "describe", "resume": "summarize",
    "resumen": "summary", "de qué trata": "what is it about", "trata": "is about",
    "hola": "hello", "buenos días": "hello", "buenas tardes": "hello", "buenas": "hello", "ayuda": "help",
    "ayúdame": "help me", "gracias": "thanks", "muchas gracias": "thank you very much", "mil gracias": "thank you very much",
    "adiós": "goodbye", "hasta luego": "see you later", "chao": "bye",
    "crea": "create", "crear": "create", "cree": "create", "créame": "create", "créa": "create", "nuevo": "new",
    "nueva": "new", "nuevos": "new", "nuevas": "new", "cambia": "change", "cambiar": "change", "cambie": "change",
    "modifica": "change", "modificar": "change", "actualiza": "update", "actualizar": "update", "edita": "edit",
    "editar": "edit", "renombra": "rename", "renombrar": "rename", "añade": "add", "añadir": "add", "agrega": "add",
    "agregar": "add", "elimina": "remove", "eliminar": "remove", "borra": "delete", "borrar": "delete",
    "propón": "propose", "proponer": "propose", "propone": "propose", "propon": "propose", "sugiere": "suggest",
    "sugerir": "suggest", "sugiéreme": "suggest", "sugerencia": "suggestion", "sugerencias": "suggestions",
    "recomienda": "recommend", "rellena": "fill", "rellenar": "fill", "rellene": "fill", "completa": "fill",
    "completar": "fill", "analiza": "analyze", "analizar": "analyze", "evalúa": "evaluate", "genera": "generate",
    "escribe": "write", "escribir": "write", "traduce": "translate", "traducir": "translate", "más": "more",
    "otro": "another", "otra": "another", "otros": "other", "otras": "other", "diferente": "different",
    "distinto": "different", "distinta": "different", "escribo": "type", "lo escribo": "I'll type it", "teclear": "type",
    "busca": "search", "buscar": "search", "busque": "search", "búscame": "search", "encuentra": "find",
    "encontrar": "find", "muestra": "show", "muéstrame": "show", "mostrar": "show", "calcula": "calculate",
    "calcular": "calculate", "calcule": "calculate", "abre": "open", "abrir": "open", "lista": "list", "comprueba": "check",
    "cuenta": "count", "ejecuta": "run", "ejecutar": "run", "generar": "generate", "hora": "time", "qué hora es": "what time is it", "fecha": "date",
    "página web": "web page", "en la web": "on the web",
    "yo": "I", "tú": "you", "usted": "you", "me": "me", "mí": "me", "mi": "my", "mis": "my", "tengo": "have",
    "tienes": "have", "tiene": "has", "tenemos": "have", "puedes": "can", "puede": "can", "pueden": "can",
    "podrías": "could", "podría": "could", "quiero": "want", "quisiera": "would like", "un": "a", "una": "a",
    "unos": "some", "unas": "some", "el": "the", "la": "the", "los": "the", "las": "the", "lo": "it", "sobre": "about",
    "acerca de": "about", "de": "of", "del": "of the", "al": "to the", "para": "for", "por": "for", "con": "with",
    "y": "and", "o": "or", "por favor": "please", "esto": "this", "este": "this", "esta": "this", "estos": "these",
    "estas": "these", "aquí": "here", "página": "page", "ahora": "now", "algo": "something", "en": "in", "no": "not",
    "nombre": "name", "frecuencia": "frequency",
})

glossary.add("fr", {
    "que": "what", "quoi": "what", "qu": "what", "qu est ce que": "what", "qu est ce qu": "what", "qui": "who",
    "comment": "how", "pourquoi": "why", "quand": "when", "où": "where", "quel": "which", "quelle": "which",
    "quels": "which", "quelles": "which", "combien": "how many", "combien de": "how many",
    "peux tu": "can you", "pouvez vous": "can you", "peut on": "can one", "dis moi": "tell me", "donne moi": "give me",
    "que peux tu faire": "what can you do", "que pouvez vous faire": "what can you do", "que sais tu faire": "what can you do",
    "qu est ce que tu peux faire": "what can you do", "qu est ce que vous pouvez faire": "what can you do",
    "que peux tu faire ici": "what can you do here", "que pouvez vous faire ici": "what can you do here",
    "faire": "do", "est ce que": "", "est ce qu": "", "est": "is", "sont": "are", "y a t il": "are there",
    "explique": "explain", "expliquer": "explain", "décris": "describe", "résume": "summarize", "résumé": "summary",
    "de quoi parle": "what is about", "de quoi s agit il": "what is it about", "parle": "is about",
    "bonjour": "hello", "salut": "hello", "bonsoir": "hello", "aide": "help", "aide moi": "help me", "aidez moi": "help me",
    "merci": "thanks", "merci beaucoup": "thank you very much", "merci bien": "thank you very much", "au revoir": "goodbye",
    "à plus tard": "see you later", "à bientôt": "see you later", "ciao": "bye",
    "crée": "create", "créer": "create", "créez": "create", "crées": "create", "nouveau": "new", "nouvelle": "new",
    "nouveaux": "new", "nouvelles": "new", "change": "change", "changer": "change", "changez": "change",
    "modifie": "change", "modifier": "change", "modifiez": "change", "mets à jour": "update", "mettre à jour": "update",
    "édite": "edit", "renomme": "rename", "renommer": "rename", "renommez": "rename", "ajoute": "add", "ajouter": "add",
    "ajoutez": "add", "supprime": "delete", "supprimer": "delete", "retire": "remove", "propose": "propose",
    "proposer": "propose", "proposez": "propose", "propose moi": "propose", "suggère": "suggest", "suggérer": "suggest",
    "suggérez": "suggest", "suggestion": "suggestion", "suggestions": "suggestions", "recommande": "recommend",
    "remplis": "fill", "remplissez": "fill", "remplir": "fill", "complète": "fill",
    "compléter": "fill", "analyse": "analyze", "analyser": "analyze", "analysez": "analyze", "évalue": "evaluate", "génère": "generate",
    "écris": "write", "écrire": "write", "traduis": "translate", "traduire": "translate", "plus de": "more", "plus": "more",
    "autre": "another", "autres": "other", "différent": "different", "différente": "different", "je le tape": "I'll type it",
    "taper": "type", "tape": "type",
    "cherche": "search", "chercher": "search", "cherchez": "search", "recherche": "search", "rechercher": "search",
    "recherchez": "search", "trouve": "find", "trouver": "find", "trouvez": "find", "montre": "show", "montre moi": "show",
    "montrer": "show", "montrez": "show", "affiche": "show", "afficher": "show", "calcule": "calculate",
    "calculer": "calculate", "calculez": "calculate", "ouvre": "open", "ouvrir": "open", "liste": "list",
    "vérifie": "check", "compte": "count", "lance": "run", "lancer": "run", "exécute": "run", "exécuter": "run", "générer": "generate", "heure": "time",
    "quelle heure est il": "what time is it", "date": "date", "page web": "web page", "sur le web": "on the web",
    "je": "I", "j": "I", "tu": "you", "vous": "you", "moi": "me", "me": "me", "mon": "my", "ma": "my",
    "mes": "my", "ai": "have", "as": "have", "a": "has", "avons": "have", "avez": "have", "peux": "can", "peut": "can",
    "pouvez": "can", "pourrais": "could", "pourriez": "could", "veux": "want", "voudrais": "would like",
    "un": "a", "une": "a", "des": "some", "le": "the", "la": "the", "les": "the", "l": "the", "sur": "about",
    "à propos de": "about", "à": "to", "de": "of", "du": "of the", "d": "of", "au": "to the", "aux": "to the", "pour": "for",
    "avec": "with", "et": "and", "ou": "or", "s il vous plaît": "please", "s il te plaît": "please", "ce": "this",
    "cet": "this", "cette": "this", "ces": "these", "ceci": "this", "cela": "that", "ça": "this", "il": "it",
    "ici": "here", "page": "page", "maintenant": "now", "quelque chose": "something", "dans": "in", "en": "in",
    "ne": "", "pas": "not", "nom": "name", "fréquence": "frequency",
})
