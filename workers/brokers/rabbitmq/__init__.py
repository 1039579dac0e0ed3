"""RabbitMQ: `source` drains a dead-letter queue, `sink` publishes messages back (the handler
`workers.brokers.redrive.publisher`), `record` maps AMQP messages to ingest records and back."""
