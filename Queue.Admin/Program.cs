using Queue.Admin;
using Queue.Admin.Infrastructure;

if (args.Length > 0 && Cli.Commands.Contains(args[0]))
{
    return await Cli.RunAsync(args);
}

var builder = WebApplication.CreateBuilder(args);
builder.AddQueueAdminUi();

var app = builder.Build();
app.UseQueueAdminUi();
await app.RunAsync();
return 0;
