using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Queue.Client;

public static class QueueClientServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="QueueClient"/> as a typed client of IHttpClientFactory, over the same pooled
    /// <see cref="SocketsHttpHandler"/> settings as a standalone client.
    /// </summary>
    public static IHttpClientBuilder AddQueueClient(this IServiceCollection services, Action<QueueClientOptions> configure)
    {
        services.Configure(configure);
        return services.AddHttpClient<QueueClient>((sp, http) => http.BaseAddress = sp.GetRequiredService<IOptions<QueueClientOptions>>().Value.BaseAddress)
            .ConfigurePrimaryHttpMessageHandler(sp => QueueHttp.CreateHandler(sp.GetRequiredService<IOptions<QueueClientOptions>>().Value))
            // The handler's own pooled lifetime recycles connections; the factory need not rotate handlers too.
            .SetHandlerLifetime(Timeout.InfiniteTimeSpan);
    }
}
