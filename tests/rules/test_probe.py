"""The rules' probes on a real Spider database: each a read-only question the engine answers."""

from __future__ import annotations

from sqlmend.rules.probe import Probe


def test_inclusion_is_the_data_s_own_foreign_key(spider_conn):
    db = spider_conn("flight_2")
    probe = Probe(db, db.schema())
    # flight_2 declares no key on flights.Airline, yet every value is an airlines.uid
    assert probe.included(("flights", "Airline"), ("airlines", "uid")) is True
    # flight numbers run far past the dozen airline ids
    assert probe.included(("flights", "FlightNo"), ("airlines", "uid")) is False
    before = probe.queries
    assert probe.included(("flights", "Airline"), ("airlines", "uid")) is True
    assert probe.queries == before, "a probe is answered once per connection"
