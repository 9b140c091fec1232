namespace Queue.Core.Data;

/// <summary>The database is too slow or too busy right now: answer 503 with Retry-After rather than queue without limit.</summary>
public sealed class ServiceBusyException(string message) : Exception(message);
