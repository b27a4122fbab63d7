"""Token counts outside the Latin script: Lore's estimate against cl100k.

    python bench/token_scripts.py

Recall packs are cut to a budget of cl100k-like tokens that Lore estimates
offline (src/lore/index/tokens.py). This prints, for a sentence in each of
fourteen scripts (and emoji, English, code), cl100k's count (the `bpe-openai`
package, a test dependency), the estimate and their ratio: what chose the
per-script costs in `_WIDE_COSTS`.
"""

from __future__ import annotations

SAMPLES = {
    "japanese": "東京オフィスではすべてのタイムスタンプをJSTで表示しますが、保存はUTCです。データベースの移行は金曜日の夜に行います。設定ファイルは環境ごとに分けてください。",
    "chinese": "我们决定使用PostgreSQL作为主数据库，因为它支持事务和复杂查询。部署脚本需要先设置环境变量，然后运行迁移。",
    "korean": "데이터베이스 마이그레이션은 금요일 밤에 실행합니다. 설정 파일은 환경별로 분리해 주세요. 배포 스크립트는 먼저 환경 변수를 설정해야 합니다.",
    "russian": "Мы решили использовать PostgreSQL как основную базу данных, потому что она поддерживает транзакции. Скрипт развёртывания требует переменные окружения.",
    "ukrainian": "Ми вирішили використовувати PostgreSQL як основну базу даних, бо вона підтримує транзакції та складні запити.",
    "greek": "Αποφασίσαμε να χρησιμοποιήσουμε την PostgreSQL ως κύρια βάση δεδομένων επειδή υποστηρίζει συναλλαγές.",
    "hebrew": "החלטנו להשתמש ב-PostgreSQL כמסד הנתונים הראשי כי הוא תומך בטרנזקציות ובשאילתות מורכבות.",
    "arabic": "قررنا استخدام PostgreSQL كقاعدة بيانات رئيسية لأنها تدعم المعاملات والاستعلامات المعقدة.",
    "hindi": "हमने PostgreSQL को मुख्य डेटाबेस के रूप में उपयोग करने का निर्णय लिया क्योंकि यह लेनदेन का समर्थन करता है।",
    "thai": "เราตัดสินใจใช้ PostgreSQL เป็นฐานข้อมูลหลักเพราะรองรับธุรกรรมและคิวรีที่ซับซ้อน",
    "vietnamese": "Chúng tôi quyết định sử dụng PostgreSQL làm cơ sở dữ liệu chính vì nó hỗ trợ giao dịch và truy vấn phức tạp.",
    "german": "Wir haben beschlossen, PostgreSQL als Hauptdatenbank zu verwenden, weil sie Transaktionen und komplexe Abfragen unterstützt.",
    "french": "Nous avons décidé d'utiliser PostgreSQL comme base de données principale, car elle prend en charge les transactions.",
    "emoji": "🚀🔥✅❌🎉👍😀🐛💡⚠️ " * 4,
    "english": "We decided to use PostgreSQL as the main database because it supports transactions and complex queries.",
    "code": "def compute_invoice_total(lines: list[Line]) -> Decimal:\n    return sum((l.amount for l in lines), Decimal(0))\n",
}


def main() -> None:
    import bpe_openai

    from lore.index.tokens import count_tokens

    enc = bpe_openai.get_encoding("cl100k_base")
    print(f"{'script':<11} {'cl100k':>6} {'lore':>5} {'ratio':>6}")
    for name, text in SAMPLES.items():
        real, estimate = len(enc.encode(text)), count_tokens(text)
        print(f"{name:<11} {real:>6} {estimate:>5} {estimate / real:>6.2f}")


if __name__ == "__main__":
    main()
