"""The scheduler process: APScheduler alarms, sync ticks, leader lock, start-up reconcile."""
