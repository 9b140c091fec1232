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
        static QueueClientOptions Options(IServiceProvider sp) => sp.GetRequiredService<IOptions<QueueClientOptions>>().Value;
        return services.AddHttpClient(nameof(QueueClient), (sp, http) => http.BaseAddress = Options(sp).BaseAddress)
            .ConfigurePrimaryHttpMessageHandler(sp => QueueHttp.CreateHandler(Options(sp)))
            // The handler's own pooled lifetime recycles connections; the factory need not rotate handlers too.
            .SetHandlerLifetime(Timeout.InfiniteTimeSpan)
            // Built by hand: the options live behind IOptions, which the client's constructors do not take.
            .AddTypedClient((http, sp) => new QueueClient(http, Options(sp)));
    }
}
