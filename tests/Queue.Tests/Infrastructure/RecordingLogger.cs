using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace Queue.Tests.Infrastructure;

/// <summary>Keeps every entry logged at <see cref="LogLevel.Warning"/> and above, for tests that assert what an operator is told.</summary>
internal sealed class RecordingLogger<T> : ILogger<T>
{
    private readonly ConcurrentQueue<(EventId Event, string Message)> entries = new();

    public IReadOnlyList<(EventId Event, string Message)> Entries => [.. entries];

    public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

    public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Warning;

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
    {
        if (IsEnabled(logLevel))
        {
            entries.Enqueue((eventId, formatter(state, exception)));
        }
    }
}
