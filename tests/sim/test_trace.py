from netfl.sim.trace import Dropout, Evaluation, TraceBus, TransferEnd


def test_subscribers_get_their_kinds_and_catch_alls_get_all():
    bus, evals, every = TraceBus(), [], []
    bus.subscribe(evals.append, Evaluation)
    bus.subscribe(every.append)
    e = Evaluation(time_s=1.0, round=1, accuracy=0.5, loss=1.0)
    d = Dropout(time_s=2.0, node="c0", up=False)
    bus.emit(e)
    bus.emit(d)
    assert evals == [e] and every == [e, d]
    assert bus.wants(Evaluation) and bus.wants(TransferEnd)  # catch-all listens to everything


def test_wants_is_false_without_listeners():
    assert not TraceBus().wants(Evaluation)


def test_rows_flatten_paths():
    row = TransferEnd(time_s=1, transfer_id=0, src="c0", dst="cloud", tag="client->cloud",
                      nbytes=10, path=("c0", "e0", "cloud"), duration_s=1, wire_bytes=10,
                      retransmissions=0).as_row()
    assert row["kind"] == "transfer_end" and row["path"] == "c0>e0>cloud"


def test_a_bulk_record_stands_for_others_only_where_every_subscriber_takes_it():
    from netfl.sim.trace import ExchangeBooked, TrainEnd, TransferEnd

    class Taker:
        def each(self, record):
            pass

        def bulk(self, record):
            pass

    bus, taker = TraceBus(), Taker()
    assert bus.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd)  # nobody listens
    bus.subscribe(taker.each, TransferEnd)
    assert not bus.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd)
    bus.subscribe(taker.bulk, ExchangeBooked)
    assert bus.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd)
    bus.subscribe(Taker().each, TrainEnd)  # another object, which takes no bulk record
    assert not bus.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd)
    everything = TraceBus()
    everything.subscribe(lambda record: None)
    assert not everything.takes_in_bulk(ExchangeBooked, TransferEnd)
