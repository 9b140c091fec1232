namespace Queue.Client;

/// <summary>The connection settings Queue's clients should use, for standalone clients and IHttpClientFactory alike.</summary>
public static class QueueHttp
{
    public static SocketsHttpHandler CreateHandler(QueueClientOptions options) => new()
    {
        PooledConnectionLifetime = options.PooledConnectionLifetime,
        PooledConnectionIdleTimeout = options.PooledConnectionIdleTimeout,
        ConnectTimeout = TimeSpan.FromSeconds(15),
        AutomaticDecompression = System.Net.DecompressionMethods.All,
        // Many workers long-polling one Api need more than a couple of connections each.
        MaxConnectionsPerServer = int.MaxValue,
    };
}
