namespace Queue.Client;

/// <summary>Where Queue is, who the caller is, and how patiently to retry.</summary>
public sealed class QueueClientOptions
{
    /// <summary>The service's base URL, e.g. <c>http://queue.example:5080/</c>; every contract path is relative to it.</summary>
    public Uri? BaseAddress { get; set; }

    /// <summary>A customer or worker key, sent as <c>Authorization: Bearer</c>.</summary>
    public string? ApiKey { get; set; }

    /// <summary>Retries after the first attempt for 503, 429, an in-flight idempotent twin (409) and dropped connections.</summary>
    public int MaxRetries { get; set; } = 5;

    /// <summary>The first backoff; it doubles per retry (with jitter) unless the server sends Retry-After.</summary>
    public TimeSpan RetryBaseDelay { get; set; } = TimeSpan.FromMilliseconds(200);

    /// <summary>No backoff, Retry-After included, is longer than this.</summary>
    public TimeSpan MaxRetryDelay { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Connections are replaced after this long so DNS changes and rebalanced backends are picked up.
    /// </summary>
    public TimeSpan PooledConnectionLifetime { get; set; } = TimeSpan.FromMinutes(2);

    /// <summary>
    /// Below the idle timeouts of common balancers (AWS ALB 60 s, nginx 75 s, Azure 4 min), so the client closes an idle
    /// connection before a balancer silently forgets it.
    /// </summary>
    public TimeSpan PooledConnectionIdleTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Called before each retry, e.g. to log it; the attempt number starts at 1.</summary>
    public Action<QueueRetry>? OnRetry { get; set; }
}

/// <summary>One retry about to happen: what failed, and how long the client waits first.</summary>
public sealed record QueueRetry(string Method, string Path, int Attempt, TimeSpan Delay, int? Status, Exception? Error);
