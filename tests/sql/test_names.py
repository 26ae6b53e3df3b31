"""Names from the schema: which schema name a name the schema does not have stands for (sqlmend.sql.names)."""

from __future__ import annotations

import pytest

from sqlmend.sql import names


@pytest.mark.parametrize(("unknown", "schema", "name", "reason"), [
    ('Customer', ["customer", "orders"], "customer", "case"),
    ("studentId", ["StuID", "student_id"], "student_id", "separators"),
    ("pet_type", ["PetType", "PetAge"], "PetType", "separators"),
    ("customers", ["customer", "orders"], "customer", "plural"),
    ("Birth_Years", ["Birth_Year", "Name"], "Birth_Year", "plural"),
    ("order", ["customer", "orders"], "orders", "plural"),
    ("template_types", ["Ref_Template_Types", "Templates"], "Ref_Template_Types", "prefix"),
    ("owner", ["owner_id", "name"], "owner_id", "id"),
    ("mail", ["email", "name"], "email", "edit"),
    ("state", ["status", "amount"], "status", "edit"),
])
def test_the_strongest_reason_names_the_match(unknown, schema, name, reason):
    best = names.match(unknown, schema)[0]
    assert (best.name, best.reason) == (name, reason)
    assert names.unique(names.match(unknown, schema)) == best


def test_a_column_prefix_is_its_own_tables_name():
    # "id" of singer is Singer_ID; another table's X_ID is a match for a person, never a proof
    found = names.match("id", [("Singer_ID", "singer"), ("Song_ID", "singer")])
    assert [(m.name, m.reason) for m in found] == [("Singer_ID", "prefix"), ("Song_ID", "words")]
    assert names.unique(found).name == "Singer_ID"
    assert names.match("Id", [("ModelId", "model_list")])[0].reason == "prefix"  # the start of the table's name


def test_two_as_close_prove_nothing():
    assert names.unique(names.match("id", [("Singer_ID", "singer"), ("Song_ID", "song")])) is None
    assert names.unique(names.match("name", ["first_name", "last_name"])) is None


def test_a_word_that_is_not_the_tables_name_is_a_match_but_no_proof():
    # cars_data has Id; MakeId is car_names' column: a rename would answer another question
    (m,) = names.match("MakeId", [("Id", "cars_data")])
    assert (m.reason, m.proof) == ("words", False) and names.unique([m]) is None
    # a table written with words the schema's does not have ranks after a one-letter edit
    found = names.match("Meber_of_club", ["Club", "Member_of_club"])
    assert [(m.name, m.reason) for m in found] == [("Member_of_club", "edit"), ("Club", "words")]
    assert names.unique(found).name == "Member_of_club"


def test_nothing_close_matches_nothing():
    assert names.match("performers", ["singer", "concert", "stadium"]) == []
    assert names.match("model", ["MPG", "Cylinders", "Horsepower"]) == []


def test_the_edit_bound_grows_with_the_name():
    assert names.edit_bound("mail", "email") == 1
    assert names.edit_bound("state", "status") == 2
    assert names.match("nme", ["name"])[0].reason == "edit"
    assert names.match("xyz", ["name"]) == []


def test_words_and_quoting():
    assert names.words("HTTPServer_Name2") == ["http", "server", "name", "2"]
    assert names.needs_quotes("order") and names.needs_quotes("Home Town") and not names.needs_quotes("orders")
    assert names.NameMatch("email", "customer", "edit", 1).describe() == "customer.email (edit 1)"


def test_a_keyword_where_a_table_goes_is_renamed_in_the_text():
    from sqlmend.sql import fixes

    text = "SELECT count(*) FROM like AS T1 JOIN Highschooler AS T2 ON T1.student_id = T2.id"
    ((start, end, word),) = names.keyword_tables(text)
    assert text[start:end] == word == "like"
    fixed = fixes.apply(text, [{"op": "replace_span", "start": start, "end": end, "expect": "like", "value": "Likes"}])
    assert fixed == text.replace("like", "Likes")
    with pytest.raises(fixes.FixError):
        fixes.apply(text, [{"op": "replace_span", "start": 0, "end": 6, "expect": "like", "value": "x"}])
