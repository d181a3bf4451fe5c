"""Cross-language recall: 20 short English facts, each asked about in Russian, German and French.

Run: python bench/multilingual.py [--model DIR --query-prefix P --document-prefix P] ...

Each question (a paraphrase, not a translation of the fact's words) is embedded as a search query and the
20 facts as memories; recall@1 is the share of questions whose own fact has the highest cosine. The built-in
model always runs too, in the same process, so the figures sit side by side.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import embeddings  # noqa: E402
from retrieval_cli import folder_embedder  # noqa: E402

#: (fact, Russian question, German question, French question)
FACTS = [
    ("We moved the main database to PostgreSQL 17 in March.",
     "На какую версию постгреса мы перешли?", "Welche Postgres-Version nutzen wir jetzt?",
     "Quelle version de Postgres utilisons-nous maintenant ?"),
    ("The deploy script retries three times before paging the on-call engineer.",
     "Сколько раз скрипт выкладки повторяет попытку?", "Wie oft versucht das Deploy-Skript es erneut?",
     "Combien de fois le script de déploiement réessaie-t-il ?"),
    ("Secrets are stored in HashiCorp Vault, never in the repository.",
     "Где хранятся секреты?", "Wo bewahren wir Geheimnisse auf?", "Où gardons-nous les secrets ?"),
    ("Caroline adopted a golden retriever named Biscuit last summer.",
     "Как зовут собаку Кэролайн?", "Wie heißt Carolines Hund?", "Comment s'appelle le chien de Caroline ?"),
    ("The API is versioned under the /v2 prefix since January.",
     "Какой префикс версии у API?", "Unter welchem Pfad ist die API versioniert?",
     "Sous quel préfixe l'API est-elle versionnée ?"),
    ("Melanie runs a pottery class every Thursday evening.",
     "Когда Мелани ведёт занятия по керамике?", "Wann gibt Melanie ihren Töpferkurs?",
     "Quand Mélanie donne-t-elle son cours de poterie ?"),
    ("Unit tests must finish in under two minutes on CI.",
     "Сколько времени могут идти юнит-тесты в CI?", "Wie lange dürfen die Unit-Tests in der CI dauern?",
     "Combien de temps les tests unitaires peuvent-ils durer en CI ?"),
    ("The office moved from Berlin to Munich in 2023.",
     "В какой город переехал офис?", "In welche Stadt ist das Büro umgezogen?",
     "Dans quelle ville le bureau a-t-il déménagé ?"),
    ("John is allergic to peanuts and avoids Thai food.",
     "На что у Джона аллергия?", "Wogegen ist John allergisch?", "À quoi John est-il allergique ?"),
    ("We chose Redis for caching because of its sorted sets.",
     "Что мы используем для кэширования?", "Welches System nutzen wir als Cache?",
     "Quel outil utilisons-nous pour le cache ?"),
    ("Logs are kept for thirty days and then deleted.",
     "Сколько дней хранятся логи?", "Wie lange werden die Logs aufbewahrt?",
     "Combien de temps conserve-t-on les journaux ?"),
    ("Anna is training for the Boston marathon in April.",
     "К какому забегу готовится Анна?", "Für welchen Lauf trainiert Anna?",
     "Pour quelle course Anna s'entraîne-t-elle ?"),
    ("The frontend is written in TypeScript with React.",
     "На чём написан фронтенд?", "In welcher Sprache ist das Frontend geschrieben?",
     "En quel langage le frontend est-il écrit ?"),
    ("Backups run every night at 2 a.m. to an S3 bucket.",
     "Когда делаются резервные копии?", "Wann laufen die Backups?", "À quelle heure les sauvegardes ont-elles lieu ?"),
    ("Tom's daughter started university in Edinburgh.",
     "Где учится дочь Тома?", "Wo studiert Toms Tochter?", "Où étudie la fille de Tom ?"),
    ("The billing service crashes when a currency code is missing.",
     "Почему падает сервис оплаты?", "Warum stürzt der Abrechnungsdienst ab?",
     "Pourquoi le service de facturation plante-t-il ?"),
    ("Our team meets for a retrospective every second Friday.",
     "Как часто у команды ретроспектива?", "Wie oft hat das Team eine Retrospektive?",
     "À quelle fréquence l'équipe fait-elle une rétrospective ?"),
    ("Maria plays the cello in a community orchestra.",
     "На каком инструменте играет Мария?", "Welches Instrument spielt Maria?", "De quel instrument joue Maria ?"),
    ("The mobile app supports offline mode since version 3.2.",
     "С какой версии приложение работает без сети?", "Seit welcher Version funktioniert die App offline?",
     "Depuis quelle version l'application fonctionne-t-elle hors ligne ?"),
    ("Rate limits are 100 requests per minute per API key.",
     "Какой лимит запросов на ключ API?", "Wie hoch ist das Ratenlimit pro API-Schlüssel?",
     "Quelle est la limite de requêtes par clé d'API ?"),
]
LANGUAGES = ("ru", "de", "fr")


def recall_at_1(embedder: Any) -> dict[str, float]:
    import numpy

    facts = numpy.array([numpy.frombuffer(vector, numpy.float32) for vector in embedder.embed([f[0] for f in FACTS])])
    scores = {}
    for column, language in enumerate(LANGUAGES, start=1):
        hits = 0
        for index, row in enumerate(FACTS):
            query = numpy.frombuffer(embedder.embed_query(row[column]), numpy.float32)
            hits += int(numpy.argmax(facts @ query) == index)
        scores[language] = 100.0 * hits / len(FACTS)
    scores["all"] = sum(scores[language] for language in LANGUAGES) / len(LANGUAGES)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], metavar="DIR")
    parser.add_argument("--query-prefix", action="append", default=[])
    parser.add_argument("--document-prefix", action="append", default=[])
    args = parser.parse_args()
    systems: list[tuple[str, Any]] = [("built-in all-MiniLM-L6-v2 (int8 graph)", embeddings.Embedder(embeddings.ModelSpec()))]
    for index, folder in enumerate(args.model):
        query = args.query_prefix[index] if index < len(args.query_prefix) else ""
        document = args.document_prefix[index] if index < len(args.document_prefix) else ""
        systems.append((folder, folder_embedder(folder, query, document)))
    print("| model | ru | de | fr | all |\n|---|---:|---:|---:|---:|")
    for name, embedder in systems:
        scores = recall_at_1(embedder)
        print(f"| {name} | " + " | ".join(f"{scores[key]:.0f}" for key in (*LANGUAGES, "all")) + " |")


if __name__ == "__main__":
    main()
